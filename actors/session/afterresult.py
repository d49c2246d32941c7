"""After-result runs: the daemon's ``after_result`` hook, beside a session's loop.

The hook (``SessionDeps.after_result``: the workspaces' changed-files count) runs after each
turn's ``result`` in a task of its own (``run``, started in the session's nursery with the first
result: an idle session has no such task), bounded by ``AFTER_RESULT_TIMEOUT``, never in
the loop: results that come while it runs are coalesced into one more run. A run that fails or
overruns is logged and costs its event, not the session. The event a run returns waits in
``take`` and the loop is woken (``wake``) to append it, so the log keeps one writer.

**At a close.** A run still due or in flight when the session starts to close would be cancelled
with the session, and its event (``workspace {changed}``) never logged. So the loop calls
``settle`` before the close starts: it waits until no run is due or in flight, at most
``AFTER_RESULT_TIMEOUT``, and returns the events waiting to be logged, which the loop appends
before the close's ``exit``. A ``result`` that lands during the close (the child ends its turn
as it leaves, or the close ends a running turn as ``interrupted``) makes a run due too: the loop
calls ``settle`` again just before it logs the ``exit``. The settles of a session share one
deadline, ``AFTER_RESULT_TIMEOUT`` after the first (a close waits that long for runs in all,
which ``Session.close_bound`` counts on); a run that does not finish in time is skipped with a
log line. Events of runs that finish after the session ended are dropped (nothing follows
``exit``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from protocol.events import Event

__all__ = ["AFTER_RESULT_TIMEOUT", "AfterResults"]

log = logging.getLogger("corral.session")

AFTER_RESULT_TIMEOUT = 30.0
"""Seconds the ``after_result`` hook may take (git on a large worktree) before it is abandoned,
and the longest a close waits for the runs still due."""

Hook = Callable[[str], Awaitable[Event | None]]


class AfterResults:
    """One session's after-result runs (see the module docstring).

    ``wake`` is awaited once a run has left an event to ``take``; it must not wait for the loop
    to append it (the loop may be waiting in ``settle``).
    """

    def __init__(self, hook: Hook, session_id: str, wake: Callable[[], Awaitable[None]]) -> None:
        self._hook = hook
        self._session_id = session_id
        self._wake = wake
        self._due = False  # a result came that no run has started on yet
        self._wakeup = trio.Event()  # set when a run becomes due; the task waits on it
        self._quiet = trio.Event()  # set while no run is due or in flight; ``settle`` waits on it
        self._quiet.set()
        self._ready: list[Event] = []
        self._deadline: float | None = None  # of the settles, set by the first (the close's)
        self._skipped = False  # a settle gave up on a run (said once)
        self._nursery: trio.Nursery | None = None  # where ``run`` starts, with the first result
        self._started = False

    def attach(self, nursery: trio.Nursery) -> None:
        """Start ``run`` in ``nursery`` (the session's) when the first result comes."""
        self._nursery = nursery

    def result(self) -> None:
        """A ``result`` was appended: a run is due (one more, if one is in flight)."""
        self._due = True
        self._wakeup.set()
        if self._quiet.is_set():
            self._quiet = trio.Event()
        if self._nursery is not None and not self._started:
            self._started = True
            self._nursery.start_soon(self.run)

    def take(self) -> list[Event]:
        """The events finished runs returned that are not logged yet, oldest first."""
        events, self._ready = self._ready, []
        return events

    async def settle(self) -> list[Event]:
        """Wait until no run is due or in flight and return the events to log (``take``); at
        most until ``AFTER_RESULT_TIMEOUT`` after the first settle (every settle of a close
        shares that deadline). On the deadline the runs still going are skipped (logged once);
        their events, if they come later, follow through ``wake`` while the session lives."""
        if self._deadline is None:
            self._deadline = trio.current_time() + AFTER_RESULT_TIMEOUT
        if not self._quiet.is_set():
            with trio.move_on_at(self._deadline) as scope:
                await self._quiet.wait()
            if scope.cancelled_caught and not self._skipped:
                self._skipped = True
                log.warning("session %s: closing without the after-result run still going (over %g s)",
                            self._session_id, AFTER_RESULT_TIMEOUT)
        return self.take()

    async def run(self) -> None:
        """Run the hook once per burst of results, until cancelled (with the session)."""
        while True:
            await self._wakeup.wait()
            self._wakeup = trio.Event()
            self._due = False
            event = await self._once()
            if event is not None:
                self._ready.append(event)
            if not self._due:
                self._quiet.set()
            if event is not None:
                await self._wake()

    async def _once(self) -> Event | None:
        event: Event | None = None
        with trio.move_on_after(AFTER_RESULT_TIMEOUT) as scope:
            try:
                event = await self._hook(self._session_id)
            except Exception:  # noqa: BLE001 - a failing hook costs its event, not the session
                log.exception("session %s: the after-result hook failed", self._session_id)
        if scope.cancelled_caught:
            log.warning("session %s: the after-result hook took more than %g s",
                        self._session_id, AFTER_RESULT_TIMEOUT)
        return event
