"""The read side of a session's event log, shared by every subscriber.

A subscription is a cursor over the log, so replay and live delivery are one loop: read what
is there from the cursor on, then wait until the log grows past it. No event can be skipped
or sent twice at the switch-over from replay to live, because there is no switch-over.

Each publish is stamped with its time (the last ``_STAMPS`` or more of them), so a connection can
tell how long an event took from its publish to its write (``published_at``).

The feed shows the log up to the last ``appended()`` (the session's *publish*), not up to its
last write: the session publishes a batch of events only once they are as durable as its
setting asks, so a reader that happens to be awake never reads an event the log has not
committed yet.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterator
from typing import Protocol

import trio

_STAMPS = 512
"""Publishes whose time a feed remembers at least (for the delivery metric)."""


class LogReader(Protocol):
    """What a feed needs of an event log."""

    @property
    def last_seq(self) -> int: ...

    def read_from(self, from_seq: int, until: int | None = None) -> Iterator[bytes]: ...


class Feed:
    """Wakes its readers when the log grows; readable after the session has ended.

    One feed serves a session id for the daemon's whole run: a resumed session's new log is
    ``rebind``-ed into it, so a subscription made before the session closed goes on seamlessly.
    """

    def __init__(self, log: LogReader) -> None:
        self._log = log
        self._shown = log.last_seq
        self._stamp_floor = log.last_seq
        """Events up to this seq have no publish time (before the feed, or forgotten)."""
        self._stamp_seqs: list[int] = []
        self._stamp_times: list[float] = []
        self._grew: trio.Event | None = None
        """Set at the next publish; made only while a reader waits for one."""
        self._listeners: dict[Callable[[], None], None] = {}

    @property
    def last_seq(self) -> int:
        """The newest seq published."""
        return self._shown

    def read_from(self, from_seq: int) -> Iterator[bytes]:
        """Encoded event frames with ``from_seq <= seq <= last_seq``, as they were first sent."""
        return self._log.read_from(from_seq, self._shown)

    def rebind(self, log: LogReader) -> None:
        """Serve ``log`` from now on (the same session's log, reopened with every seq it had)."""
        self._log = log
        self.appended()

    def appended(self) -> None:
        """Publish everything the log holds and wake every reader (called by the session once a
        batch of appends is committed)."""
        if self._log.last_seq != self._shown:
            self._stamp(self._log.last_seq)
        self._shown = self._log.last_seq
        grew, self._grew = self._grew, None
        if grew is not None:
            grew.set()
        for wake in list(self._listeners):
            wake()

    def listen(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` after each publish until ``unlisten(wake)``: a connection, which then
        reads the feed itself. ``wake`` runs in the session's task: it must never raise or block
        (a connection notes the news, or writes the new events to its socket as far as the
        socket takes them without waiting)."""
        self._listeners[wake] = None

    def unlisten(self, wake: Callable[[], None]) -> None:
        """Stop calling ``wake``; a no-op if it was not listening."""
        self._listeners.pop(wake, None)

    def published_at(self, seq: int) -> float | None:
        """The ``time.perf_counter()`` of the publish that showed event ``seq``, for the last
        ``_STAMPS`` to ``2 * _STAMPS`` publishes (``corral.event.delivery``); else ``None``."""
        if seq <= self._stamp_floor or seq > self._shown:
            return None
        index = bisect.bisect_left(self._stamp_seqs, seq)
        return self._stamp_times[index] if index < len(self._stamp_times) else None

    def _stamp(self, last_seq: int) -> None:
        self._stamp_seqs.append(last_seq)
        self._stamp_times.append(time.perf_counter())
        if len(self._stamp_seqs) > 2 * _STAMPS:
            self._stamp_floor = self._stamp_seqs[_STAMPS - 1]
            del self._stamp_seqs[:_STAMPS], self._stamp_times[:_STAMPS]

    async def wait_past(self, seq: int) -> None:
        """Return once an event after ``seq`` is published. Cancellable."""
        while self._shown <= seq:
            if self._grew is None:
                self._grew = trio.Event()
            await self._grew.wait()
