"""One thread for every session log's fsyncs: ``batched(call)`` runs ``call`` off the event loop.

Each event log fsyncs in a worker thread (``actors.session.eventlog``). One thread round trip
per fsync is cheap alone, but twenty streaming sessions flushing every 100 ms make two hundred a
second, and each returning thread wakes the event loop and takes the interpreter lock from it:
that, not the disk, was most of the daemon's event latency at the 99th percentile (issue 24's
``bench_latency``). So the calls that arrive while a batch is in flight wait for the next one,
and a batch is one thread that runs its calls in order and wakes the loop once. The flushers fire
on a shared tick (``next_tick``), so one tick's fsyncs of every session go out as one batch.

A caller cancelled while its call is queued or running stops waiting; the call still runs (an
fsync on a duplicate descriptor, which it closes itself), as a cancelled ``trio.to_thread``
call with ``abandon_on_cancel`` would.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import trio

__all__ = ["batched", "next_tick"]


async def batched(call: Callable[[], None]) -> None:
    """Run ``call`` in this trio run's fsync thread, with whatever else is queued; re-raise what
    it raised."""
    await _batcher().submit(call)


def next_tick(now: float, interval: float) -> float:
    """The first multiple of ``interval`` after ``now``: every flusher's deadline falls on the
    same tick, never later than ``interval`` after the write that made it due."""
    return (math.floor(now / interval) + 1) * interval


class _Call:
    __slots__ = ("call", "done", "error")

    def __init__(self, call: Callable[[], None]) -> None:
        self.call = call
        self.done = trio.Event()
        self.error: BaseException | None = None


class _Batcher:
    """The queue and the one thread draining it (started when the first call arrives)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queued: list[_Call] = []
        self._running = False
        self._token = trio.lowlevel.current_trio_token()

    async def submit(self, call: Callable[[], None]) -> None:
        item = _Call(call)
        with self._lock:
            self._queued.append(item)
            start = not self._running
            self._running = True
        if start:
            trio.lowlevel.start_thread_soon(self._drain, _ignore, name="corral fsync")
        await item.done.wait()
        if item.error is not None:
            raise item.error

    def _drain(self) -> None:
        """In the thread: run batches until the queue is empty, waking the loop once a batch."""
        while True:
            with self._lock:
                batch, self._queued = self._queued, []
                if not batch:
                    self._running = False
                    return
            for item in batch:
                try:
                    item.call()
                except BaseException as exc:  # handed to its caller
                    item.error = exc
            try:
                self._token.run_sync_soon(_finish, batch)
            except trio.RunFinishedError:
                with self._lock:
                    self._running = False
                return


def _finish(batch: list[_Call]) -> None:
    for item in batch:
        item.done.set()


def _ignore(outcome: object) -> None:
    return None


_BATCHER: trio.lowlevel.RunVar[_Batcher] = trio.lowlevel.RunVar("corral_fsync_batcher")


def _batcher() -> _Batcher:
    try:
        return _BATCHER.get()
    except LookupError:
        found = _Batcher()
        _BATCHER.set(found)
        return found
