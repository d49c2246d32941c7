"""Restart intensity and backoff are pure: exact delays, exact windows, seeded jitter."""

from __future__ import annotations

import random

import pytest

from supervisor.tree.backoff import Backoff, GiveUp, RestartAfter, RestartPolicy, RestartTracker

NO_JITTER = Backoff(jitter=0.0)


def test_defaults_are_the_session_restart_policy() -> None:
    # PROTOCOL.md: at most 3 restarts in 60 s; 0.5 s doubling up to 30 s, plus up to 20% jitter.
    policy = RestartPolicy()
    assert (policy.intensity, policy.period) == (3, 60.0)
    assert policy.backoff == Backoff(initial=0.5, factor=2.0, max=30.0, jitter=0.2)


def test_first_restart_is_immediate_then_doubling_up_to_max() -> None:
    delays = [NO_JITTER.delay(n) for n in range(10)]
    assert delays == [0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_huge_attempt_counts_stay_at_max() -> None:
    assert NO_JITTER.delay(100_000) == 30.0
    assert Backoff(initial=1.0, factor=10.0, max=7.0, jitter=0.0).delay(3) == 7.0


def test_jitter_stretches_by_at_most_the_fraction_and_is_seeded() -> None:
    backoff = Backoff()  # jitter 0.2
    for seed in range(200):
        delay = backoff.delay(3, random.Random(seed))
        assert 2.0 <= delay < 2.4
        assert delay == 2.0 * (1.0 + 0.2 * random.Random(seed).random())


def test_jitter_applies_after_the_cap() -> None:
    rng = random.Random(5)
    expected = 30.0 * (1.0 + 0.2 * random.Random(5).random())
    assert Backoff().delay(50, rng) == expected
    assert expected > 30.0


def test_an_immediate_restart_draws_no_randomness() -> None:
    rng = random.Random(3)
    assert Backoff().delay(0, rng) == 0.0
    assert rng.random() == random.Random(3).random()


@pytest.mark.parametrize(
    "kwargs",
    [{"initial": -1.0}, {"max": -0.1}, {"jitter": -0.2}, {"factor": 0.5}],
)
def test_backoff_rejects_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**kwargs)


@pytest.mark.parametrize("kwargs", [{"intensity": -1}, {"period": -1.0}])
def test_policy_rejects_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RestartPolicy(**kwargs)  # type: ignore[arg-type]


def test_decide_counts_restarts_in_the_period() -> None:
    policy = RestartPolicy(backoff=NO_JITTER)
    assert policy.decide([], 0.0) == RestartAfter(delay=0.0, attempt=1)
    assert policy.decide([0.0], 0.1) == RestartAfter(delay=0.5, attempt=2)
    assert policy.decide([0.0, 0.1], 0.7) == RestartAfter(delay=1.0, attempt=3)
    assert policy.decide([0.0, 0.1, 0.7], 1.8) == GiveUp(restarts=3, intensity=3, period=60.0)


def test_period_bound_is_inclusive_as_in_otp() -> None:
    policy = RestartPolicy(intensity=1, period=5.0, backoff=NO_JITTER)
    assert policy.recent([1.0], 6.0) == (1.0,)
    assert isinstance(policy.decide([1.0], 6.0), GiveUp)
    assert policy.recent([1.0], 6.5) == ()
    assert policy.decide([1.0], 6.5) == RestartAfter(delay=0.0, attempt=1)


def test_intensity_zero_never_restarts() -> None:
    assert RestartPolicy(intensity=0).decide([], 0.0) == GiveUp(restarts=0, intensity=0, period=60.0)


def test_decide_is_pure() -> None:
    history = [1.0, 2.0]
    RestartPolicy().decide(history, 3.0, random.Random(0))
    assert history == [1.0, 2.0]


def test_tracker_records_each_restart_at_decision_time() -> None:
    tracker = RestartTracker(RestartPolicy(backoff=NO_JITTER))
    # A crash loop: each crash happens as soon as the restarted child runs.
    now = 0.0
    decisions = []
    for _ in range(4):
        decision = tracker.next(now)
        decisions.append((now, decision))
        if isinstance(decision, RestartAfter):
            now += decision.delay
    assert decisions == [
        (0.0, RestartAfter(delay=0.0, attempt=1)),
        (0.0, RestartAfter(delay=0.5, attempt=2)),
        (0.5, RestartAfter(delay=1.0, attempt=3)),
        (1.5, GiveUp(restarts=3, intensity=3, period=60.0)),
    ]
    # Recorded when decided, not when the backoff ended; a refusal is not recorded.
    assert tracker.history == (0.0, 0.0, 0.5)


def test_time_spent_in_backoff_counts_in_the_period() -> None:
    policy = RestartPolicy(intensity=2, period=1.0, backoff=Backoff(initial=0.75, jitter=0.0))
    tracker = RestartTracker(policy)
    assert tracker.next(0.0) == RestartAfter(delay=0.0, attempt=1)
    assert tracker.next(0.25) == RestartAfter(delay=0.75, attempt=2)
    # The child ran again at 1.0 and crashed at once: both restarts are still in [0.0, 1.0].
    assert isinstance(tracker.next(1.0), GiveUp)
    # Later, the first restart has aged out: one slot is free again, after one earlier restart.
    assert tracker.next(1.1) == RestartAfter(delay=0.75, attempt=2)
    assert tracker.history == (0.25, 1.1)


def test_tracker_forgets_aged_restarts_and_clear() -> None:
    tracker = RestartTracker(RestartPolicy(intensity=1, period=10.0, backoff=NO_JITTER))
    assert tracker.next(0.0) == RestartAfter(delay=0.0, attempt=1)
    assert tracker.next(20.0) == RestartAfter(delay=0.0, attempt=1)
    assert tracker.history == (20.0,)
    tracker.clear()
    assert list(tracker.history) == []
    assert tracker.next(21.0) == RestartAfter(delay=0.0, attempt=1)


def test_tracker_jitter_comes_from_the_injected_generator() -> None:
    policy = RestartPolicy(intensity=5)
    a = RestartTracker(policy, rng=random.Random(11))
    b = RestartTracker(policy, rng=random.Random(11))
    seq_a = [a.next(float(t)) for t in range(5)]
    seq_b = [b.next(float(t)) for t in range(5)]
    assert seq_a == seq_b
    reference = random.Random(11)
    expected = [0.0] + [0.5 * 2**k * (1 + 0.2 * reference.random()) for k in range(4)]
    assert [d.delay for d in seq_a if isinstance(d, RestartAfter)] == expected
