"""The daemon's ``usage.summary``: a state directory's summary, computed off the trio thread.

Summaries run one at a time (a lock), each in a worker thread: they read every session's log
index (and scan what was appended since), which is file I/O the event loop must not wait on,
and one at a time a burst of requests (every browser tab refreshing) costs one pass each
rather than contending passes over the same files. Cancelling a request abandons its thread,
which finishes its pass (and its index writes) on its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

import trio

from actors.usage.report import summarise_state
from protocol.messages import UsageSummary, UsageSummaryResult
from protocol.price import Price

__all__ = ["UsageService"]


class UsageService:
    """Answers ``usage.summary`` for the sessions under ``state_root`` at the prices ``prices()``
    reads (blocking; called once, in a worker thread, with the first summary: a daemon that is
    never asked reads no price table)."""

    def __init__(self, state_root: Path, prices: Callable[[], Mapping[str, Price]]) -> None:
        self._root = state_root
        self._load_prices = prices
        self._prices: dict[str, Price] | None = None
        self._lock = trio.Lock()

    async def summary(self, request: UsageSummary) -> UsageSummaryResult:
        """The summary ``request`` asks for; ``BadRequest`` for a bad ``since`` or ``by``."""
        now = time.time()

        def run() -> UsageSummaryResult:
            if self._prices is None:
                self._prices = dict(self._load_prices())
            return summarise_state(self._root, self._prices, since=request.since, by=request.by,
                                   now=now)

        async with self._lock:
            return await trio.to_thread.run_sync(run, abandon_on_cancel=True)
