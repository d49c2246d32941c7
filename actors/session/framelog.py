"""``options.log_path``: every frame to and from a harness child, as NDJSON (mode 0600).

Each line is ``{"ts", "dir": "in"|"out", "pid", "frame"}``; ``frame`` is the frame's JSON when
it parses, else its text. It is a debugging aid the user asked for: writes are unbuffered, a
failed write disables the log (with one warning) and never disturbs the session.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Literal

import msgspec

from protocol.base import format_ts

log = logging.getLogger("corral.session")


class FrameLog:
    """An append-only NDJSON file of the frames one session exchanges with its children."""

    def __init__(self, path: str) -> None:
        self.path = os.path.expanduser(path)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        os.fchmod(self._fd, 0o600)

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


_ENCODER = msgspec.json.Encoder()
