"""The ``events.jsonl`` file format: checking a log at load, and streaming lines back out.

A log is one JSON-encoded ``EventFrame`` per line, ``\\n``-terminated, ``seq`` 1, 2, 3, … of one
session. ``scan`` is the load check (what it cuts and what it refuses is explained in
``actors.session.eventlog``); ``read_lines`` is the replay path for frames no longer in memory.
Both stream the file, so neither holds more than one line (plus the memory tail) at a time.
``Durability`` (when the log fsyncs) is here, with no trio, for the config and the session core.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import msgspec

from supervisor.atomic import fsync_directory as fsync_directory
from protocol.errors import StorageFailed
from protocol.messages import EventFrame

__all__ = ["DECODER", "INDEX_STEP", "LOG_NAME", "Durability", "Scan", "failed", "fsync_directory", "read_lines", "scan"]

LOG_NAME = "events.jsonl"
"""The log's file name inside a session directory."""

Durability = Literal["turn", "event", "none"]
"""When the log fsyncs: at turn boundaries and within ``fsync_interval``, after every event, or never."""

INDEX_STEP = 256
"""Lines between two entries of the sparse offset index: ``index[k]`` is where seq ``k*INDEX_STEP+1`` starts."""

DECODER = msgspec.json.Decoder(EventFrame)


class Scan:
    """What a load scan found: the good prefix (seq, bytes), its offset index and memory tail."""

    def __init__(self, memory_tail: int) -> None:
        self.last_seq = 0
        self.good_bytes = 0
        self.index: list[int] = []
        self.tail: deque[bytes] = deque(maxlen=memory_tail)
        self.bad_reason: str | None = None
        """Why the bytes after ``good_bytes`` (a trailing run of unreadable lines) are to be cut."""


def scan(path: Path, session_id: str, memory_tail: int) -> Scan:
    """Check the log at ``path``; raises ``StorageFailed`` on corruption that is not a torn tail."""
    result = Scan(memory_tail)
    offset = 0
    with open(path, "rb") as file:
        for lineno, line in enumerate(file, 1):
            if not line.endswith(b"\n"):
                result.bad_reason = result.bad_reason or f"line {lineno} has no newline (a torn write)"
                break
            body = line[:-1]
            try:
                frame = DECODER.decode(body)
            except msgspec.DecodeError as exc:
                result.bad_reason = result.bad_reason or f"line {lineno} is not an event frame: {exc}"
                offset += len(line)
                continue
            if result.bad_reason is not None:
                raise StorageFailed(
                    f"{path}: line {lineno} is a good frame after an unreadable line (at byte "
                    f"{result.good_bytes}); the log is corrupt and was left untouched",
                    data={"path": str(path)},
                )
            if frame.session_id != session_id or frame.seq != result.last_seq + 1:
                raise StorageFailed(
                    f"{path}: line {lineno} holds seq {frame.seq} of session {frame.session_id!r}, "
                    f"expected seq {result.last_seq + 1} of {session_id!r}; the log was left untouched",
                    data={"path": str(path)},
                )
            if result.last_seq % INDEX_STEP == 0:
                result.index.append(offset)
            result.last_seq += 1
            result.tail.append(body)
            offset += len(line)
            result.good_bytes = offset
    return result


def read_lines(path: Path, offset: int, seq: int, start: int, end: int) -> Iterator[bytes]:
    """Stream lines from byte ``offset`` (where line ``seq`` starts), yielding seqs ``start..end``.

    Lines are yielded without their newline. Raises ``StorageFailed`` if the file cannot be read
    or ends before ``end``.
    """
    try:
        with open(path, "rb") as file:
            file.seek(offset)
            for line in file:
                if not line.endswith(b"\n"):
                    break
                if seq >= start:
                    yield line[:-1]
                if seq == end:
                    return
                seq += 1
    except OSError as exc:
        raise failed(f"cannot read {path}", path, exc) from exc
    raise StorageFailed(f"{path} ends before seq {end}", data={"path": str(path)})


def failed(message: str, path: Path, exc: OSError) -> StorageFailed:
    """A ``StorageFailed`` for an OS error on ``path``, with the path and errno in ``data``."""
    detail = exc.strerror or str(exc)
    return StorageFailed(f"{message}: {detail}", data={"path": str(path), "errno": exc.errno})
