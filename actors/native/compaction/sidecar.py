"""The compaction sidecar: a session's compaction decisions, durable, next to its store file.

``<store dir>/<native session id>.compaction.json`` holds ``{"version": 1, "factor": F,
"decisions": [...]}``: the calibration factor and every decision (``plan.Decision``) in the order
it was made, which is the order ``plan.replay`` applies them after a restart. Each save writes
the whole file atomically (a temp file, fsync, rename, fsync of the directory): a crash leaves the
old file or the new one. A sidecar that cannot be read (or names a newer version) or saved is a
warning, once per ``Sidecar``; compaction goes on with what it holds in memory.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import msgspec

from .plan import Decision

__all__ = ["VERSION", "Sidecar", "SidecarState"]

log = logging.getLogger("corral.native.compaction")

VERSION = 1


class SidecarState(msgspec.Struct, kw_only=True):
    """The file's contents."""

    version: int = VERSION
    factor: float = 1.0
    decisions: list[Decision] = []


class Sidecar:
    """One session's sidecar file; ``state`` is what it holds (loaded by ``load``)."""

    def __init__(self, directory: str | os.PathLike[str], session_id: str) -> None:
        self.path = Path(directory) / f"{session_id}.compaction.json"
        self.state = SidecarState()
        self.warning: str | None = None
        """The first load or save failure, if any (later ones are not repeated)."""

    def load(self) -> SidecarState:
        """Read the file (none yet: an empty state). A bad file is a warning, not an error."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return self.state
        except OSError as exc:
            self._warn(f"compaction sidecar {self.path} is unreadable: {exc}")
            return self.state
        try:
            state = _DECODER.decode(raw)
        except msgspec.DecodeError as exc:
            self._warn(f"compaction sidecar {self.path} is unreadable: {exc}")
            return self.state
        if state.version != VERSION:
            self._warn(f"compaction sidecar {self.path} has version {state.version}, "
                       f"not {VERSION}; it is ignored")
            return self.state
        self.state = state
        return state

    def save(self) -> None:
        """Write ``state`` atomically; a failure is a warning."""
        temp = self.path.with_name(self.path.name + ".tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            try:
                data = memoryview(_ENCODER.encode(self.state))
                while data:
                    data = data[os.write(fd, data):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, self.path)
            dir_fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            self._warn(f"compaction sidecar {self.path} could not be saved: {exc}")

    def _warn(self, message: str) -> None:
        if self.warning is None:
            self.warning = message
            log.warning("%s", message)


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(SidecarState)
