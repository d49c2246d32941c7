"""A session's durable event log: ``events.jsonl``, one encoded ``EventFrame`` per line.

Theory of operation
-------------------
**Write path.** ``append`` gives the event the next ``seq`` (gapless from 1), encodes the frame
once, and writes ``frame + b"\\n"`` with ``os.write`` on an ``O_APPEND`` descriptor (no
user-space buffer), looping on short writes. Only when the whole line is in the file does
``last_seq`` move, so the bytes ``append`` returns (what every client is sent) are always the
bytes on disk: the same ``seq`` carries the same bytes before and after a restart. A failed
write is truncated back and consumes no ``seq``.

**Durability.** ``append`` never fsyncs: fsync blocks, and the writer is the session's trio
thread. With ``event`` every line, and with ``turn`` (the default) a ``result``, ``permission``
or ``exit`` (the moments a client acts on), makes a sync *due*: the writer then awaits
``commit()``, which fsyncs in a worker thread, before it tells anyone of the new events. The
writer awaits it, so appends are never reordered around a sync. Other ``turn`` lines are left
to ``flush`` (a session runs it while ``flush_pending``: an idle session has no flusher task),
which fsyncs in a worker thread no later than ``fsync_interval`` after the first dirty write, on
a tick shared by every session's flusher (``syncer``: one thread round
trip a tick for all of them). Under ``event`` the writer shows an event only once its fsync is done; under
``turn`` it shows the events first and then awaits the fsync (still before it takes its next
message), or hands it to ``flush`` to do at once (``sync_soon``), so a turn's end costs
clients and the next prompt no disk flush while the fsync still lands within
``fsync_interval`` of the write, as PROTOCOL.md promises. ``none`` never fsyncs (not even at close). A failed fsync (or a failed
truncate of a partial line) leaves the log *broken*: the kernel may have dropped the dirty
pages, so nothing more is appended and ``StorageFailed`` is raised from then on; the lines
already written stay (a reader may have seen them), so no ``seq`` is ever reused.

**Load.** ``open`` scans an existing file line by line (streamed) and checks that every line
decodes as an ``EventFrame`` of this session with ``seq == previous + 1``. A trailing run of
unreadable lines (a line without its newline, or one that is not a frame) is what a crash
mid-write or a power loss leaves: it is truncated away and described in the ``LoadReport``.
Anything else (an unreadable line followed by a good one, a readable line with the wrong
``seq`` or session id) is corruption of events clients may already have seen; truncating would
let a later event reuse their ``seq``, so ``open`` raises ``StorageFailed`` and leaves the file
untouched for a person to look at.

**Read path.** ``read_from`` serves the newest ``memory_tail`` frames from memory and older
ones by streaming the file from a sparse offset index (one offset every ``INDEX_STEP`` lines),
up to the ``last_seq`` of the moment of the call. It keeps working after ``close``.

The log has one writer, the session actor's trio thread; it is not thread-safe.
"""

from __future__ import annotations

import errno
import functools
import os
from collections.abc import Awaitable, Callable, Iterator
from itertools import islice
from pathlib import Path

import msgspec
import trio

from actors.session.syncer import batched, next_tick
from actors.session.logfile import (
    DECODER,
    INDEX_STEP,
    LOG_NAME,
    Durability,
    Scan,
    failed,
    fsync_directory,
    read_lines,
    scan,
)
from protocol.base import format_ts
from protocol.events import Event, Exit, Permission, Result
from protocol.messages import EventFrame

__all__ = ["LOG_NAME", "EventLog", "EventLogStatistics", "LoadReport"]

WriteFn = Callable[[int, memoryview], int]
FsyncFn = Callable[[int], None]
Offload = Callable[[Callable[[], None]], Awaitable[None]]
"""Runs a blocking call away from the trio thread (by default in a worker thread, abandoned on cancel)."""


class LoadReport(msgspec.Struct, kw_only=True, frozen=True):
    """What ``EventLog.open`` found: the events kept and the torn tail it cut off, if any."""

    last_seq: int
    events: int
    truncated_bytes: int = 0
    torn_line_seq_guess: int | None = None
    """The ``seq`` the cut-off line would have carried (``last_seq + 1``), when one was cut."""
    reason: str | None = None


class EventLogStatistics(msgspec.Struct, kw_only=True, frozen=True):
    """A snapshot of the log: newest seq, file size, fsyncs done, and unsynced writes pending."""

    last_seq: int
    bytes: int
    fsyncs: int
    dirty: bool


class EventLog:
    """One session's append-only event log; build it with ``EventLog.open``."""

    @classmethod
    def open(
        cls,
        directory: Path,
        session_id: str,
        *,
        durability: Durability = "turn",
        memory_tail: int = 2048,
        fsync_interval: float = 0.1,
        write: WriteFn = os.write,
        fsync: FsyncFn = os.fsync,
        offload: Offload | None = None,
    ) -> tuple[EventLog, LoadReport]:
        """Open (creating it, mode 0600, in a 0700 directory) and check ``directory/events.jsonl``.

        ``write`` and ``fsync`` replace ``os.write``/``os.fsync`` on the log's data, for fault
        injection; ``offload`` replaces the worker thread of ``commit`` and the flusher (tests run
        it inline to keep virtual time exact). Raises ``StorageFailed`` when the file cannot be opened or is corrupt.
        """
        if durability not in ("turn", "event", "none"):
            raise ValueError(f"unknown durability {durability!r}")
        if memory_tail < 0 or fsync_interval <= 0:
            raise ValueError("memory_tail must be >= 0 and fsync_interval > 0")
        path = directory / LOG_NAME
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            created = not path.exists()
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise failed(f"cannot open {path}", path, exc) from exc
        try:
            os.fchmod(fd, 0o600)
            found = scan(path, session_id, memory_tail)
            size = os.fstat(fd).st_size
            if found.good_bytes < size:
                os.ftruncate(fd, found.good_bytes)
                if durability != "none":
                    fsync(fd)
            if created and durability != "none":
                fsync_directory(directory)
        except OSError as exc:
            os.close(fd)
            raise failed(f"cannot load {path}", path, exc) from exc
        except BaseException:
            os.close(fd)
            raise
        torn = size - found.good_bytes
        report = LoadReport(
            last_seq=found.last_seq,
            events=found.last_seq,
            truncated_bytes=torn,
            torn_line_seq_guess=found.last_seq + 1 if torn else None,
            reason=found.bad_reason if torn else None,
        )
        log = cls(path, session_id, fd, durability, fsync_interval, write, fsync, offload or batched, found)
        return log, report

    def __init__(
        self,
        path: Path,
        session_id: str,
        fd: int,
        durability: Durability,
        fsync_interval: float,
        write: WriteFn,
        fsync: FsyncFn,
        offload: Offload,
        found: Scan,
    ) -> None:
        """Internal: use ``EventLog.open``."""
        self._path = path
        self._session_id = session_id
        self._fd = fd
        self._durability = durability
        self._fsync_interval = fsync_interval
        self._write = write
        self._fsync = fsync
        self._offload = offload
        self._last_seq = found.last_seq
        self._size = found.good_bytes
        self._index = found.index
        self._tail = found.tail
        self._fsyncs = 0
        self._dirty = False
        self._sync_due = False
        self._broken: OSError | None = None
        self._wake: trio.Event | None = None
        """Set by a write while ``run_flusher`` waits for one (made only then)."""
        self._urgent = False
        """``sync_soon`` asked: ``flush`` syncs at once, not at the tick."""
        self._hurry: trio.Event | None = None
        """Set by ``sync_soon`` while ``flush`` waits for the tick (made only then)."""

    @property
    def last_seq(self) -> int:
        """The seq of the newest event in the log (0 when empty)."""
        return self._last_seq

    @property
    def path(self) -> Path:
        """The log file."""
        return self._path

    def append(self, event: Event, *, now: float) -> tuple[EventFrame, bytes]:
        """Write ``event`` as the next frame (``now`` is wall-clock epoch seconds) and return it.

        The bytes returned are the frame exactly as written, without the newline: send them as
        they are, after ``commit()``. Raises ``StorageFailed`` when the write fails; the seq is
        then not consumed. Raises ``trio.ClosedResourceError`` after ``close``.
        """
        if self._fd < 0:
            raise trio.ClosedResourceError("the event log is closed")
        if self._broken is not None:
            raise failed(f"{self._path} is unusable after an earlier failure", self._path, self._broken)
        seq = self._last_seq + 1
        frame = EventFrame(session_id=self._session_id, seq=seq, ts=format_ts(now), event=event)
        data = _ENCODER.encode(frame)
        line = data + b"\n"
        start = self._size
        try:
            self._write_all(line)
        except OSError as exc:
            self._roll_back(start)
            raise failed(f"cannot append to {self._path}", self._path, exc) from exc
        self._dirty = True
        if self._durability == "event" or (
            self._durability == "turn" and isinstance(event, _TURN_BOUNDARIES)
        ):
            self._sync_due = True
        elif self._wake is not None:
            self._wake.set()
        self._last_seq = seq
        self._size = start + len(line)
        if (seq - 1) % INDEX_STEP == 0:
            self._index.append(start)
        self._tail.append(data)
        return frame, data

    async def commit(self) -> None:
        """Fsync in a worker thread if an append made a sync due (see the module docstring).

        Raises ``StorageFailed`` if the fsync fails (the log is then broken). Cancellation
        abandons the fsync (it finishes on a duplicate descriptor) and leaves the sync due.
        """
        if not self._sync_due:
            return
        self._sync_due = False
        try:
            await self._sync_in_thread()
        except BaseException:
            self._sync_due = self._broken is None
            raise

    def sync_soon(self) -> None:
        """Hand a due sync to ``flush``, to be done at once rather than awaited here (the
        ``turn`` writer's path: the next message is not held up by a disk flush)."""
        if self._sync_due:
            self._sync_due = False
            self._urgent = True
            if self._hurry is not None:
                self._hurry.set()
            if self._wake is not None:
                self._wake.set()

    @property
    def durability(self) -> Durability:
        """When the log fsyncs (``turn``, ``event`` or ``none``)."""
        return self._durability

    @property
    def flush_pending(self) -> bool:
        """Whether writes wait for ``flush`` (``turn`` durability, not synced yet, log usable)."""
        return self._durability == "turn" and self._dirty and self._broken is None and self._fd >= 0

    @property
    def sync_due(self) -> bool:
        """Whether an append since the last ``commit`` must be fsynced before it is shown."""
        return self._sync_due

    def read_from(self, from_seq: int, until: int | None = None) -> Iterator[bytes]:
        """Encoded frames with ``seq >= max(from_seq, 1)`` up to ``until`` (default: the current
        ``last_seq``), in order.

        Served from memory when the tail covers ``from_seq``, else streamed from the file (which
        can raise ``StorageFailed`` while iterating). Works after ``close``.
        """
        start = max(from_seq, 1)
        end = self._last_seq if until is None else min(until, self._last_seq)
        if start > end:
            return iter(())
        tail_first = self._last_seq - len(self._tail) + 1
        if self._tail and start >= tail_first:
            # From the right: a live subscriber reads the newest few frames of a full tail.
            newest = reversed(self._tail)
            return reversed(list(islice(newest, self._last_seq - end, self._last_seq - start + 1)))
        block = (start - 1) // INDEX_STEP
        return read_lines(self._path, self._index[block], block * INDEX_STEP + 1, start, end)

    def frames_from(self, from_seq: int) -> Iterator[EventFrame]:
        """``read_from`` decoded: the frames themselves (for the boot scan and tests)."""
        return (DECODER.decode(data) for data in self.read_from(from_seq))

    async def run_flusher(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """``flush`` whenever writes are pending, until cancelled (a flusher that outlives its
        writes; a session instead runs ``flush`` only while ``flush_pending``). With other
        durabilities it only sleeps. Raises ``StorageFailed`` if an fsync fails."""
        task_status.started()
        if self._durability != "turn":
            await trio.sleep_forever()
        while True:
            if not self.flush_pending:
                self._wake = trio.Event()
                try:
                    await self._wake.wait()
                finally:
                    self._wake = None
            await self.flush()

    async def flush(self) -> None:
        """For ``turn`` durability: fsync (in a worker thread) within ``fsync_interval`` of the
        first pending write, on the shared tick (at once after ``sync_soon``), until no write is
        pending; then return. On cancellation it does a final fsync of pending writes, shielded
        and bounded by ``_FINAL_SYNC_BOUND`` seconds. Raises ``StorageFailed`` if an fsync fails
        (the log is then broken)."""
        deadline = next_tick(trio.current_time(), self._fsync_interval)
        try:
            while self.flush_pending:
                if not self._urgent:
                    self._hurry = trio.Event()
                    try:
                        with trio.move_on_at(deadline):
                            await self._hurry.wait()  # ``sync_soon``: now, not at the deadline
                    finally:
                        self._hurry = None
                self._urgent = False
                # Writes landing while this fsync runs are due one interval after it started.
                deadline = next_tick(trio.current_time(), self._fsync_interval)
                await self._sync_in_thread()
        finally:
            with trio.move_on_after(_FINAL_SYNC_BOUND, shield=True):
                await self._sync_in_thread()

    def sync(self) -> None:
        """Fsync now if writes are pending (blocking; used at close). No-op for ``none``."""
        if self._durability == "none" or not self._dirty or self._fd < 0 or self._broken is not None:
            return
        try:
            self._fsync(self._fd)
        except OSError as exc:
            self._broken = exc
            raise failed(f"cannot fsync {self._path}", self._path, exc) from exc
        self._fsyncs += 1
        self._dirty = False
        self._sync_due = False

    def close(self) -> None:
        """Sync pending writes and close the file; idempotent. ``read_from`` keeps working."""
        if self._fd < 0:
            return
        try:
            self.sync()
        finally:
            os.close(self._fd)
            self._fd = -1

    def statistics(self) -> EventLogStatistics:
        """A frozen snapshot of the log's counters."""
        return EventLogStatistics(
            last_seq=self._last_seq, bytes=self._size, fsyncs=self._fsyncs, dirty=self._dirty
        )

    def _write_all(self, line: bytes) -> None:
        view = memoryview(line)
        done = 0
        while done < len(line):
            written = self._write(self._fd, view[done:])
            if written <= 0:
                raise OSError(errno.EIO, "write made no progress")
            done += written

    def _roll_back(self, size: int) -> None:
        """Cut a partial line off; if even that fails the log must not be written again."""
        try:
            os.ftruncate(self._fd, size)
        except OSError as exc:
            self._broken = exc

    async def _sync_in_thread(self) -> None:
        """Fsync a duplicate of the descriptor in a worker thread, which closes the duplicate.

        The duplicate lets a cancelled (abandoned) fsync finish safely even after ``close``.
        """
        if not self._dirty or self._fd < 0 or self._broken is not None:
            return
        self._dirty = False
        try:
            duplicate = os.dup(self._fd)
            await self._offload(functools.partial(_fsync_and_close, self._fsync, duplicate))
        except OSError as exc:
            self._broken = exc
            raise failed(f"cannot fsync {self._path}", self._path, exc) from exc
        except BaseException:
            self._dirty = True
            raise
        self._fsyncs += 1


_TURN_BOUNDARIES = (Result, Permission, Exit)
_FINAL_SYNC_BOUND = 2.0
_ENCODER = msgspec.json.Encoder()


def _fsync_and_close(fsync: FsyncFn, fd: int) -> None:
    try:
        fsync(fd)
    finally:
        os.close(fd)
