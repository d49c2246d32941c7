"""The usage index: ``sessions/<id>/usage.idx``, the turn facts of ``events.jsonl`` kept beside it.

Theory of operation
-------------------
The log is the truth; the index is a cache of ``scan_span`` over its first ``size`` bytes (the
turns, and their ``rollup`` per day and model), never trusted over it. ``session_turns`` stats the log and checks the index against it: the same
file (inode), at least ``size`` bytes long, and the last line the index covered still there
(its first bytes, which name the session, ``seq`` and time, and its last ones); and, when the log has not grown, its modification time unchanged (so a log
rewritten in place at its old length is rescanned; the daemon only appends and cuts back, and a
rewrite that also grows the log is beyond this check). Then the turns appended since are scanned from ``size`` on (a session still
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
from actors.usage.rollup import Rollup, roll_up

__all__ = ["INDEX_NAME", "IndexedUsage", "load_usage"]

INDEX_NAME = "usage.idx"
"""The index's file name inside a session directory."""


class IndexedUsage:
    """One session's usage as its index holds it: the turns summed per (day, model), and the
    turns themselves, decoded only when asked for (a summary needs them for one day at most)."""

    __slots__ = ("_turns", "rollups")

    def __init__(self, rollups: list[Rollup], turns: msgspec.Raw | list[TurnFacts]) -> None:
        self.rollups = rollups
        self._turns = turns

    def turns(self) -> list[TurnFacts]:
        """Every turn, oldest first."""
        if isinstance(self._turns, msgspec.Raw):
            self._turns = _TURNS.decode(self._turns)
        return self._turns


def load_usage(directory: Path) -> IndexedUsage:
    """The usage of ``directory/events.jsonl`` up to its last whole line, through the index
    (brought up to date, or rebuilt, and written back when it changed).

    A session without a log has no turns. Raises ``OSError`` if the log cannot be read; a
    failure to write the index only costs the next call a scan.
    """
    log = directory / LOG_NAME
    try:
        fd = os.open(log, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return IndexedUsage([], [])
    try:
        stat = os.fstat(fd)
        length, inode, mtime = stat.st_size, stat.st_ino, stat.st_mtime_ns
        index = _load(directory / INDEX_NAME)
        if index is None or not _covers(fd, index, inode, length, mtime):
            index = _Index(inode=inode, mtime_ns=mtime, size=0, model=None, rollups=[], turns=_NO_TURNS)
        if index.size == length:
            return IndexedUsage(index.rollups, index.turns)
        data = os.pread(fd, length - index.size, index.size)
    finally:
        os.close(fd)
    turns, model, read = scan_span(data, index.model)
    if read == 0:
        return IndexedUsage(index.rollups, index.turns)
    every = _TURNS.decode(index.turns) + turns
    last = data.rfind(b"\n", 0, read - 1) + 1
    index = _Index(inode=inode, mtime_ns=mtime, size=index.size + read, model=model,
                   rollups=roll_up(index.rollups, turns), turns=msgspec.Raw(_ENCODER.encode(every)),
                   line_at=index.size + last, head=data[last:read][:_HEAD], tail=data[last:read][-_TAIL:])
    _store(directory / INDEX_NAME, index)
    return IndexedUsage(index.rollups, every)


class _Index(msgspec.Struct, kw_only=True, frozen=True):
    """The index file (msgpack): the log it covers, how far, its model then, and its turns."""

    version: int = 2
    inode: int
    mtime_ns: int
    """The log's modification time when it was last read."""
    size: int
    model: str | None
    rollups: list[Rollup]
    turns: msgspec.Raw
    """The turns (msgpack of ``list[TurnFacts]``), decoded only when needed."""
    line_at: int = 0
    """Where the last line covered starts; ``head`` and ``tail`` are its first and last bytes."""
    head: bytes = b""
    tail: bytes = b""


_HEAD = 128
"""A line's first bytes: its frame's type, session id, seq and time (what tells two logs apart)."""
_TAIL = 64

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(_Index)
_TURNS = msgspec.msgpack.Decoder(list[TurnFacts])
_NO_TURNS = msgspec.Raw(_ENCODER.encode([]))


def _load(path: Path) -> _Index | None:
    """The index at ``path``; None when it is missing, unreadable, torn or of another version."""
    try:
        index = _DECODER.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError):
        return None
    return index if index.version == 2 else None


def _covers(fd: int, index: _Index, inode: int, length: int, mtime: int) -> bool:
    """Whether the log open on ``fd`` (``inode``, ``length`` bytes, modified at ``mtime``) still
    starts with what the index covered: same file, no shorter, the covered tail's bytes
    unchanged, and not modified since if it is no longer."""
    if index.inode != inode or index.size > length or (index.size == length and index.mtime_ns != mtime):
        return False
    if index.size == 0:
        return True
    line = index.size - index.line_at
    if not 0 < line or len(index.head) != min(line, _HEAD) or len(index.tail) != min(line, _TAIL):
        return False
    return (os.pread(fd, len(index.head), index.line_at) == index.head
            and os.pread(fd, len(index.tail), index.size - len(index.tail)) == index.tail)


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
