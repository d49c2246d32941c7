"""A session's refused connections, rate-limited per ``(host, port)``: ``Refusals``.

An agent that retries a blocked host in a loop would otherwise write one ``sandbox`` event per
attempt into the session's log. Here the first refusal of a ``host:port`` is an event at once
(``count`` 1); the repeats that follow are counted, and each ``WINDOW`` seconds after the last
event for that ``host:port`` one event with their ``count`` sums them up. A window without
repeats forgets the ``host:port`` (its next refusal is an event at once again). So a loop costs
the log at most one event per ``host:port`` per window, and the counts of a ``host:port``'s
events add up to its refusals. Repeats in the window running when the session stops are not
reported.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from protocol.errors import ActorGone
from protocol.events import Event, SandboxEvent

__all__ = ["WINDOW", "Refusals"]

WINDOW = 30.0
"""Seconds after an event for a ``host:port`` during which its repeats are only counted."""

Announce = Callable[[Event], Awaitable[None]]


class Refusals:
    """Announces refusals through ``announce``, limited as the module docstring says, while
    ``run`` runs (before it, or after it, each refusal is an event of its own)."""

    def __init__(self, announce: Announce, *, window: float = WINDOW) -> None:
        self._announce = announce
        self._window = window
        self._repeats: dict[tuple[str, int], int] = {}
        """The ``host:port``s in a window, and their refusals not yet announced."""
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the windows' timers until cancelled."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            self._repeats.clear()

    async def refused(self, host: str, port: int) -> None:
        """One refused connection to ``host:port``."""
        key = (host, port)
        if key in self._repeats:
            self._repeats[key] += 1
            return
        if self._nursery is not None:
            self._repeats[key] = 0
            self._nursery.start_soon(self._watch, key)
        await self._announce(_event(host, port, 1))

    async def _watch(self, key: tuple[str, int]) -> None:
        """Each window, announce the repeats it saw; forget ``key`` after a window with none."""
        while True:
            await trio.sleep(self._window)
            repeats = self._repeats[key]
            if repeats == 0:
                del self._repeats[key]
                return
            self._repeats[key] = 0
            try:
                await self._announce(_event(*key, repeats))
            except ActorGone:  # the session is gone: nobody left to tell
                return


def _event(host: str, port: int, count: int) -> SandboxEvent:
    return SandboxEvent(kind="network", host=host, port=port, decision="denied", count=count)
