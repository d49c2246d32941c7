"""``options.log_path``: every frame to and from a harness child, as NDJSON (mode 0600).

Each line is ``{"ts", "dir": "in"|"out", "pid", "frame"}``; ``frame`` is the frame's JSON when
it parses, else its text. It is a debugging aid the user asked for: writes are unbuffered, a
failed write disables the log (with one warning) and never disturbs the session.

The path comes from a client, so ``open_frame_log`` lets it write nothing but a new file of its
own: ``~`` is expanded and a relative path is taken from the session's ``cwd``; the file must not
exist yet (``O_EXCL``: the daemon never appends to, truncates or chmods a file it did not create)
and must not be a symlink (``O_NOFOLLOW``); and it must not be inside the daemon's state
directory (its token, ledger, other sessions' logs), except under the session's own directory.
The directory is checked as the opened descriptor resolves (``/proc/self/fd``), so a symlinked
parent is judged by where it really leads. Every descriptor is closed on every refusal.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any, Literal

import msgspec

from protocol.base import format_ts
from protocol.errors import BadRequest

__all__ = ["FrameLog", "open_frame_log"]

log = logging.getLogger("corral.session")

_FIELD = "options.log_path"
_CREATE = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class FrameLog:
    """An append-only NDJSON file of the frames one session exchanges with its children."""

    def __init__(self, fd: int, path: str) -> None:
        """Take ownership of ``fd`` (open for appending); use ``open_frame_log`` to make one."""
        self.path = path
        self._fd: int | None = fd

    def record(self, direction: Literal["in", "out"], frame: bytes, pid: int | None) -> None:
        """Append one frame; the first failure closes the log."""
        if self._fd is None:
            return
        body: Any
        try:
            body = msgspec.json.decode(frame)
        except msgspec.DecodeError:
            body = frame.decode("utf-8", errors="replace")
        line = _ENCODER.encode({"ts": format_ts(time.time()), "dir": direction, "pid": pid,
                                "frame": body}) + b"\n"
        try:
            os.write(self._fd, line)
        except OSError as exc:
            log.warning("frame log %s disabled: %s", self.path, exc.strerror)
            self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def open_frame_log(raw: object, *, cwd: str, state_dir: Path, session_dir: Path) -> FrameLog | None:
    """Create the frame log ``raw`` names (``None``: no log); ``bad_request`` naming the field
    for any path it may not write (see the module docstring)."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw or "\0" in raw:
        raise BadRequest(f"{_FIELD} must be a file path", data={"field": _FIELD})
    path = os.path.join(cwd, os.path.expanduser(raw))  # an absolute path ignores cwd
    parent, name = os.path.split(path)
    if name in ("", ".", ".."):
        raise BadRequest(f"{_FIELD} {raw!r} names a directory, not a file", data={"field": _FIELD})
    try:
        directory = os.open(parent or os.sep, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _refused(raw, exc.strerror) from None
    try:
        where = os.readlink(f"/proc/self/fd/{directory}")
        if _inside(where, state_dir) and not _inside(where, session_dir):
            raise BadRequest(f"{_FIELD} {raw!r} is inside the daemon's state directory",
                             data={"field": _FIELD})
        fd = os.open(name, _CREATE, 0o600, dir_fd=directory)
    except OSError as exc:
        raise _refused(raw, exc.strerror) from None
    finally:
        os.close(directory)
    try:
        os.fchmod(fd, 0o600)  # the umask may have taken bits away; it never adds any
    except OSError as exc:
        os.close(fd)
        raise _refused(raw, exc.strerror) from None
    return FrameLog(fd, os.path.join(where, name))


def _inside(path: str, directory: Path) -> bool:
    root = os.path.realpath(directory)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _refused(raw: str, reason: str | None) -> BadRequest:
    return BadRequest(f"cannot create {_FIELD} {raw!r}: {reason or 'refused'}", data={"field": _FIELD})


_ENCODER = msgspec.json.Encoder()
