"""Restart intensity and exponential backoff: pure decisions about when (and whether) to restart.

Two rules decide what happens when a child must be restarted, and both live here as plain data
with pure methods (time comes in as ``now``, randomness from an injectable ``random.Random``), so
the supervision tree and the session actor's harness child share one implementation and tests can
assert exact times:

* **Intensity** (Erlang/OTP): at most ``intensity`` restarts within ``period`` seconds. A restart
  is recorded at the moment it is decided, so the time a child then spends in backoff counts in
  the period. A restart at time ``t`` is "in the period" at ``now`` while ``now - period <= t``
  (OTP's inclusive bound). When ``intensity`` restarts are already in the period, the next one is
  refused: the caller gives up and escalates.
* **Backoff**: the first restart in a period is immediate; each later one waits ``initial``
  seconds, multiplied by ``factor`` each time, capped at ``max``, then stretched by up to
  ``jitter`` (a fraction: 0.2 adds between 0 and 20%) so that siblings do not restart in lockstep.
  A crash loop therefore cannot spin the CPU.

The defaults are the session restart policy of the client protocol: at most 3 restarts in 60 s,
0.5 s doubling up to 30 s, plus up to 20% jitter.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

import msgspec

__all__ = ["Backoff", "GiveUp", "RestartAfter", "RestartPolicy", "RestartTracker"]

# Used only when a caller passes no generator of its own; tests always pass a seeded one.
_DEFAULT_RNG = random.Random()


class Backoff(msgspec.Struct, kw_only=True, frozen=True):
    """Exponential backoff with jitter between restarts of one child."""

    initial: float = 0.5
    factor: float = 2.0
    max: float = 30.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.initial < 0 or self.max < 0 or self.jitter < 0:
            raise ValueError(f"backoff times and jitter must not be negative: {self!r}")
        if self.factor < 1:
            raise ValueError(f"backoff factor must be at least 1: {self!r}")

    def base(self, earlier: int) -> float:
        """The delay before jitter for a restart that follows ``earlier`` restarts in the period."""
        if earlier <= 0:
            return 0.0
        try:
            return min(self.initial * self.factor ** (earlier - 1), self.max)
        except OverflowError:
            return self.max

    def delay(self, earlier: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before a restart that follows ``earlier`` restarts in the same period.

        ``0.0`` for the first restart of a period; otherwise ``base(earlier)`` times
        ``1 + jitter * rng.random()``. Exactly one draw is taken from ``rng`` per non-zero delay
        (none when ``jitter`` is 0), so a seeded generator gives a reproducible sequence.
        """
        base = self.base(earlier)
        if base == 0.0 or self.jitter == 0.0:
            return base
        return base * (1.0 + self.jitter * (rng or _DEFAULT_RNG).random())


class RestartAfter(msgspec.Struct, kw_only=True, frozen=True):
    """Decision: restart after ``delay`` seconds; this is restart number ``attempt`` of the period."""

    delay: float
    attempt: int


class GiveUp(msgspec.Struct, kw_only=True, frozen=True):
    """Decision: ``restarts`` restarts are already in the period; one more would exceed intensity."""

    restarts: int
    intensity: int
    period: float


class RestartPolicy(msgspec.Struct, kw_only=True, frozen=True):
    """Restart intensity (``intensity`` restarts per ``period`` seconds) plus the backoff between them."""

    intensity: int = 3
    period: float = 60.0
    backoff: Backoff = msgspec.field(default_factory=Backoff)

    def __post_init__(self) -> None:
        if self.intensity < 0 or self.period < 0:
            raise ValueError(f"intensity and period must not be negative: {self!r}")

    def recent(self, history: Iterable[float], now: float) -> tuple[float, ...]:
        """The restart times of ``history`` that are still in the period ending at ``now``."""
        floor = now - self.period
        return tuple(t for t in history if t >= floor)

    def exceeded(self, history: Iterable[float], now: float) -> bool:
        """Whether one more restart at ``now`` would be more than ``intensity`` in the period."""
        return len(self.recent(history, now)) >= self.intensity

    def decide(
        self, history: Iterable[float], now: float, rng: random.Random | None = None
    ) -> RestartAfter | GiveUp:
        """Whether a child whose earlier restarts happened at ``history`` may restart at ``now``.

        Pure: ``history`` is not modified (see ``RestartTracker`` for the bookkeeping).
        """
        recent = self.recent(history, now)
        if len(recent) >= self.intensity:
            return GiveUp(restarts=len(recent), intensity=self.intensity, period=self.period)
        return RestartAfter(delay=self.backoff.delay(len(recent), rng), attempt=len(recent) + 1)


class RestartTracker:
    """The restart history of one child under one policy: ``next(now)`` decides and records.

    For an actor that restarts a single child of its own (the session's harness child): call
    ``next(trio.current_time())`` when the child died unasked, then sleep ``delay`` or give up.
    """

    def __init__(self, policy: RestartPolicy, *, rng: random.Random | None = None) -> None:
        self.policy = policy
        self._rng = rng
        self._history: list[float] = []

    @property
    def history(self) -> tuple[float, ...]:
        """Times of the restarts still in the period (older ones are forgotten as they age out)."""
        return tuple(self._history)

    def next(self, now: float) -> RestartAfter | GiveUp:
        """Decide on a restart at ``now``; a ``RestartAfter`` is recorded at ``now``, a ``GiveUp`` is not."""
        self._history = list(self.policy.recent(self._history, now))
        decision = self.policy.decide(self._history, now, self._rng)
        if isinstance(decision, RestartAfter):
            self._history.append(now)
        return decision

    def clear(self) -> None:
        """Forget every recorded restart (for example after the child was stopped on purpose)."""
        self._history.clear()
