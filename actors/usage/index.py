"""The usage index: ``sessions/<id>/usage.idx``, the turn facts of ``events.jsonl`` kept beside it.

Theory of operation
-------------------
The log is the truth; the index is a cache of ``scan_span`` over its first ``size`` bytes,
never trusted over it. ``session_turns`` stats the log and checks the index against it: the same
file (inode), at least ``size`` bytes long, and the last bytes the index covered (``tail``)
still there. Then the turns appended since are scanned from ``size`` on (a session still
writing: only whole lines, see ``logscan``) and added; if nothing was appended the index is the
answer as it stands. Any other state, a missing index, one that does not decode (a torn write, a
newer format), or a log that was replaced, cut back (the torn tail a crash leaves is truncated
when the session's log is next opened) or rewritten, means a full scan of the log, and a new
index.

The index is written with a temporary file and a rename and without fsync: any reader sees
the old file or the new one; a machine crash can at worst lose or tear it, and a torn one does
not decode, so it is rebuilt. Two writers (a daemon's summary and a daemon-less ``corral usage``)
each write a whole, correct index of the log as they read it; the last rename wins. Blocking:
call it from a worker thread in the daemon.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import msgspec

from actors.session.logfile import LOG_NAME
from actors.usage.logscan import TurnFacts, scan_span

__all__ = ["INDEX_NAME", "session_turns"]

INDEX_NAME = "usage.idx"
"""The index's file name inside a session directory."""


def session_turns(directory: Path) -> list[TurnFacts]:
    """Every turn in ``directory/events.jsonl`` up to its last whole line, through the index
    (brought up to date, or rebuilt, and written back when it changed).

    A session without a log has no turns. Raises ``OSError`` if the log cannot be read; a
    failure to write the index only costs the next call a scan.
    """
    log = directory / LOG_NAME
    try:
        fd = os.open(log, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    try:
        stat = os.fstat(fd)
        length, inode = stat.st_size, stat.st_ino
        index = _load(directory / INDEX_NAME)
        if index is None or not _covers(fd, index, inode, length):
            index = _Index(inode=inode, size=0, tail=b"", model=None, turns=[])
        if index.size == length:
            return index.turns
        data = os.pread(fd, length - index.size, index.size)
    finally:
        os.close(fd)
    turns, model, read = scan_span(data, index.model)
    if read == 0:
        return index.turns
    size = index.size + read
    tail = (index.tail + data[:read])[-_TAIL:]
    index = _Index(inode=inode, size=size, tail=tail, model=model, turns=index.turns + turns)
    _store(directory / INDEX_NAME, index)
    return index.turns


class _Index(msgspec.Struct, kw_only=True, frozen=True):
    """The index file (msgpack): the log it covers, how far, its model then, and its turns."""

    version: int = 1
    inode: int
    size: int
    tail: bytes
    model: str | None
    turns: list[TurnFacts]


_TAIL = 64
"""How many of the covered log's last bytes the index keeps, to know the log is the same."""

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(_Index)


def _load(path: Path) -> _Index | None:
    """The index at ``path``; None when it is missing, unreadable, torn or of another version."""
    try:
        index = _DECODER.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError):
        return None
    return index if index.version == 1 else None


def _covers(fd: int, index: _Index, inode: int, length: int) -> bool:
    """Whether the log open on ``fd`` (``inode``, ``length`` bytes) still starts with what the
    index covered: same file, no shorter, and the covered tail's bytes unchanged."""
    if index.inode != inode or index.size > length or len(index.tail) != min(index.size, _TAIL):
        return False
    return os.pread(fd, len(index.tail), index.size - len(index.tail)) == index.tail


def _store(path: Path, index: _Index) -> None:
    """Replace the index (temporary file of this process and thread, rename; no fsync)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(_ENCODER.encode(index))
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
