"""Supervision trees: OTP semantics asserted at exact virtual times (autojump clock).

Children are scripted: run number n of a child follows the n-th entry of its script (the last
entry repeats) and every step is logged as (what, child id, virtual time).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

from protocol.errors import ActorGone, BadRequest, ErrorCode, IntensityExceeded
from supervisor.tree.backoff import Backoff
from supervisor.tree.specs import (
    BRUTAL_KILL,
    ChildInfo,
    ChildRunning,
    ChildSpec,
    ChildState,
    ChildStats,
    ChildType,
    DuplicateChild,
    RestartType,
    Strategy,
    SupervisorSpec,
    UnknownChild,
)
from supervisor.tree.supervisor import Supervisor, supervise, supervisor_child

NO_JITTER = Backoff(jitter=0.0)
Event = tuple[str, str, float]


class Crash(Exception):
    """What a scripted child raises."""


class Log:
    """Every step of every child, with a way to wait for one (never a sleep)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._changed = trio.Event()

    def add(self, what: str, id: str) -> None:
        self.events.append((what, id, trio.current_time()))
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, what: str, id: str, count: int = 1) -> float:
        """Wait until (what, id) happened ``count`` times; the time of that occurrence."""
        while True:
            times = [t for w, i, t in self.events if (w, i) == (what, id)]
            if len(times) >= count:
                return times[count - 1]
            await self._changed.wait()

    def of(self, *whats: str) -> list[Event]:
        return [e for e in self.events if e[0] in whats]


def child(
    log: Log, id: str, *script: tuple[Any, ...], cleanup: float = 0.0, ready_after: float = 0.0, **spec: Any
) -> ChildSpec:
    """A scripted child. Steps: ("serve",), ("crash", after), ("exit", after), ("fail",).

    ``cleanup``: seconds of shielded cleanup when cancelled; ``ready_after``: seconds to get ready.
    """
    steps = list(script) or [("serve",)]
    runs = 0

    async def start(task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        nonlocal runs
        step = steps[min(runs, len(steps) - 1)]
        runs += 1
        log.add("start", id)
        if step[0] == "fail":
            raise Crash(f"{id} cannot start")
        if ready_after:
            await trio.sleep(ready_after)
            log.add("ready", id)
        task_status.started(f"{id}#{runs}")
        try:
            if step[0] == "crash":
                await trio.sleep(step[1])
                log.add("crash", id)
                raise Crash(id)
            if step[0] == "exit":
                await trio.sleep(step[1])
                log.add("exit", id)
                return
            await trio.sleep_forever()
        except trio.Cancelled:
            log.add("cancelled", id)
            if cleanup:
                with trio.CancelScope(shield=True):
                    await trio.sleep(cleanup)
            log.add("stopped", id)
            raise

    return ChildSpec(id=id, start=start, **spec)


@asynccontextmanager
async def running(
    spec: SupervisorSpec, children: Sequence[ChildSpec] = (), *, seed: int = 0
) -> AsyncIterator[Supervisor]:
    """A supervisor under a test nursery, cancelled when the block ends."""
    async with trio.open_nursery() as nursery:
        sup: Supervisor = await nursery.start(partial(supervise, spec, children, rng=random.Random(seed)))
        yield sup
        nursery.cancel_scope.cancel()


def states(sup: Supervisor) -> dict[str, ChildState]:
    return {info.id: info.state for info in sup.which_children()}


async def test_children_start_in_order_and_stop_in_reverse(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    kids = [child(log, name, cleanup=1.0) for name in "abc"]
    async with running(SupervisorSpec(), kids) as sup:
        assert [i.handle for i in sup.which_children()] == ["a#1", "b#1", "c#1"]
        await trio.sleep(10)
    assert trio.current_time() == 13.0
    assert log.events == [
        ("start", "a", 0), ("start", "b", 0), ("start", "c", 0),
        ("cancelled", "c", 10), ("stopped", "c", 11),
        ("cancelled", "b", 11), ("stopped", "b", 12),
        ("cancelled", "a", 12), ("stopped", "a", 13),
    ]  # fmt: skip


async def test_one_for_one_restarts_only_the_crashed_child(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    kids = [child(log, "a"), child(log, "b", ("crash", 1.0), ("serve",)), child(log, "c")]
    async with running(SupervisorSpec(strategy=Strategy.ONE_FOR_ONE), kids) as sup:
        assert await log.wait_for("start", "b", 2) == 1.0
        assert sup.child("b").handle == "b#2"
        stats = sup.statistics()
        assert [(c.id, c.restarts) for c in stats.children] == [("a", 0), ("b", 1), ("c", 0)]
        assert (stats.restarts, stats.restarts_in_period, stats.running) == (1, 1, 3)
    assert log.events[:5] == [
        ("start", "a", 0), ("start", "b", 0), ("start", "c", 0), ("crash", "b", 1), ("start", "b", 1),
    ]  # fmt: skip
    # Nobody else was stopped: the only cancellations are the final shutdown, in reverse.
    assert log.of("cancelled") == [("cancelled", "c", 1), ("cancelled", "b", 1), ("cancelled", "a", 1)]


async def test_one_for_all_stops_the_others_in_reverse_and_restarts_all_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    kids = [child(log, "a"), child(log, "b", ("crash", 1.0), ("serve",)), child(log, "c")]
    async with running(SupervisorSpec(strategy=Strategy.ONE_FOR_ALL), kids) as sup:
        await log.wait_for("start", "c", 2)
        assert [i.handle for i in sup.which_children()] == ["a#2", "b#2", "c#2"]
        stats = sup.statistics()
        assert stats.restarts == 1  # one restart against the intensity, however many children
        assert [c.restarts for c in stats.children] == [1, 1, 1]
    assert log.events[3:11] == [
        ("crash", "b", 1), ("cancelled", "c", 1), ("stopped", "c", 1), ("cancelled", "a", 1),
        ("stopped", "a", 1), ("start", "a", 1), ("start", "b", 1), ("start", "c", 1),
    ]  # fmt: skip


async def test_rest_for_one_restarts_the_crashed_child_and_those_after_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    kids = [
        child(log, "a"),
        child(log, "b", ("crash", 1.0), ("serve",)),
        child(log, "c"),
        child(log, "t", restart=RestartType.TEMPORARY),
        child(log, "d"),
    ]
    async with running(SupervisorSpec(strategy=Strategy.REST_FOR_ONE), kids) as sup:
        await log.wait_for("start", "d", 2)
        # The temporary child after the crash is stopped and not restarted: it is gone.
        assert list(states(sup)) == ["a", "b", "c", "d"]
    assert [e for e in log.events[5:] if e[0] != "stopped"][:7] == [
        ("crash", "b", 1), ("cancelled", "d", 1), ("cancelled", "t", 1), ("cancelled", "c", 1),
        ("start", "b", 1), ("start", "c", 1), ("start", "d", 1),
    ]  # fmt: skip
    assert [e for e in log.events if e[1] == "a"][:2] == [("start", "a", 0), ("cancelled", "a", 1)]
    assert log.of("cancelled")[-1] == ("cancelled", "a", 1)  # only in the final shutdown


@pytest.mark.parametrize(
    ("restart", "step", "restarted", "kept"),
    [
        (RestartType.PERMANENT, ("exit", 1.0), True, True),
        (RestartType.PERMANENT, ("crash", 1.0), True, True),
        (RestartType.TRANSIENT, ("exit", 1.0), False, True),
        (RestartType.TRANSIENT, ("crash", 1.0), True, True),
        (RestartType.TEMPORARY, ("exit", 1.0), False, False),
        (RestartType.TEMPORARY, ("crash", 1.0), False, False),
    ],
)
async def test_restart_types_by_exit_reason(
    autojump_clock: trio.testing.MockClock,
    restart: RestartType,
    step: tuple[str, float],
    restarted: bool,
    kept: bool,
) -> None:
    log = Log()
    kids = [child(log, "w", step, ("serve",), restart=restart), child(log, "other")]
    async with running(SupervisorSpec(), kids) as sup:
        await log.wait_for(step[0], "w")
        await trio.sleep(5)  # an observation point: long after any restart would have happened
        assert [e for e in log.of("start") if e[1] == "w"] == (
            [("start", "w", 0), ("start", "w", 1)] if restarted else [("start", "w", 0)]
        )
        expected = ChildState.RUNNING if restarted else ChildState.STOPPED
        kept_rows = {"w": expected} if kept else {}
        assert states(sup) == {**kept_rows, "other": ChildState.RUNNING}
        assert sup.statistics().restarts == int(restarted)


async def test_backoff_sequence_of_a_crash_loop_then_escalation(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    spec = SupervisorSpec(intensity=5, period=100.0, backoff=NO_JITTER)
    with pytest.raises(IntensityExceeded) as info:
        await supervise(spec, [child(log, "c"), child(log, "loop", ("crash", 0.0))], name="sup")
    assert [t for w, i, t in log.of("start") if i == "loop"] == [0.0, 0.0, 0.5, 1.5, 3.5, 7.5]
    assert trio.current_time() == 7.5
    assert log.events[-2:] == [("cancelled", "c", 7.5), ("stopped", "c", 7.5)]
    assert info.value.code is ErrorCode.INTENSITY_EXCEEDED
    assert info.value.data == {"supervisor": "sup", "child": "loop"}
    assert isinstance(info.value.__cause__, Crash)


async def test_backoff_jitter_comes_from_the_seeded_generator(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    spec = SupervisorSpec(intensity=4, period=100.0)  # default backoff: 20% jitter
    with pytest.raises(IntensityExceeded):
        await supervise(spec, [child(log, "loop", ("crash", 0.0))], rng=random.Random(42))
    reference = random.Random(42)
    expected, now = [0.0, 0.0], 0.0
    for base in (0.5, 1.0, 2.0):
        now += base * (1 + 0.2 * reference.random())
        expected.append(now)
    starts = [t for _, _, t in log.of("start")]
    assert starts == expected
    gaps = [b - a for a, b in zip(starts[1:], starts[2:], strict=False)]
    assert all(base <= gap < 1.2 * base for base, gap in zip((0.5, 1.0, 2.0), gaps, strict=True))


async def test_a_child_waiting_out_its_backoff_is_restarting(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    spec = SupervisorSpec(intensity=5, period=100.0, backoff=NO_JITTER)
    kids = [child(log, "w", ("crash", 1.0), ("crash", 1.0), ("serve",))]
    async with running(spec, kids) as sup:
        await log.wait_for("crash", "w", 2)
        assert trio.current_time() == 2.0
        await trio.sleep(0.25)  # observation point inside the 0.5 s backoff
        assert sup.which_children() == (
            ChildInfo(id="w", state=ChildState.RESTARTING, handle=None, type=ChildType.WORKER,
                      restart=RestartType.PERMANENT),
        )  # fmt: skip
        assert sup.statistics().children == (
            ChildStats(id="w", state=ChildState.RESTARTING, type=ChildType.WORKER,
                       restart=RestartType.PERMANENT, restarts=2, restart_at=2.5),
        )  # fmt: skip
        assert await log.wait_for("start", "w", 3) == 2.5


async def test_backoff_is_per_child(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    spec = SupervisorSpec(intensity=10, period=100.0, backoff=NO_JITTER)
    kids = [
        child(log, "a", ("crash", 1.0), ("crash", 2.0), ("serve",)),
        child(log, "b", ("crash", 2.0), ("serve",)),
    ]
    async with running(spec, kids):
        await log.wait_for("start", "a", 3)
    assert log.of("start") == [
        ("start", "a", 0), ("start", "b", 0),
        ("start", "a", 1),  # a's first restart: immediate
        ("start", "b", 2),  # b's first restart: immediate, whatever a did
        ("start", "a", 3.5),  # a's second restart waits 0.5 s
    ]  # fmt: skip


async def test_one_for_all_group_waits_for_the_crashed_childs_backoff(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    spec = SupervisorSpec(strategy=Strategy.ONE_FOR_ALL, intensity=5, period=100.0, backoff=NO_JITTER)
    kids = [
        child(log, "a", ("exit", 0.5), ("serve",), restart=RestartType.TRANSIENT),
        child(log, "b", ("crash", 1.0), ("crash", 1.0), ("serve",)),
    ]
    async with running(spec, kids) as sup:
        await log.wait_for("exit", "a")
        await trio.testing.wait_all_tasks_blocked()  # the supervisor has taken the exit
        assert states(sup) == {"a": ChildState.STOPPED, "b": ChildState.RUNNING}
        await log.wait_for("start", "b", 3)
    # a ended normally (transient: kept, stopped); b's crash restarts the whole list, as in OTP.
    assert log.of("start") == [
        ("start", "a", 0), ("start", "b", 0),
        ("start", "a", 1), ("start", "b", 1),
        ("start", "a", 2.5), ("start", "b", 2.5),
    ]  # fmt: skip


async def test_intensity_exceeded_stops_everyone_in_reverse_and_raises(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    spec = SupervisorSpec(intensity=2, period=10.0, backoff=NO_JITTER)
    kids = [child(log, "a"), child(log, "b", ("crash", 1.0)), child(log, "c")]
    with pytest.raises(IntensityExceeded) as info:
        await supervise(spec, kids)
    assert trio.current_time() == 3.5
    assert [t for w, i, t in log.events if (w, i) == ("start", "b")] == [0, 1, 2.5]
    assert log.of("cancelled") == [("cancelled", "c", 3.5), ("cancelled", "a", 3.5)]
    assert isinstance(info.value.__cause__, Crash)


async def test_period_bound_is_inclusive(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    spec = SupervisorSpec(intensity=1, period=5.0, backoff=NO_JITTER)
    with pytest.raises(IntensityExceeded):
        await supervise(spec, [child(log, "w", ("crash", 5.0))])
    # Restart at 5; the crash at 10 still sees it in [10 - 5, 10].
    assert log.of("start") == [("start", "w", 0), ("start", "w", 5)]
    assert trio.current_time() == 10


async def test_restarts_age_out_of_the_period(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    spec = SupervisorSpec(intensity=1, period=5.0, backoff=NO_JITTER)
    with pytest.raises(IntensityExceeded):
        await supervise(spec, [child(log, "w", ("crash", 1.0), ("crash", 6.0), ("crash", 1.0))])
    # 1: restart (immediate); 7: the restart at 1 is out of [2, 7], so again immediate; 8: too many.
    assert log.of("start") == [("start", "w", 0), ("start", "w", 1), ("start", "w", 7)]
    assert trio.current_time() == 8


async def test_intensity_zero_escalates_the_first_crash(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    with pytest.raises(IntensityExceeded):
        await supervise(SupervisorSpec(intensity=0), [child(log, "w", ("crash", 2.0))])
    assert trio.current_time() == 2
    assert len(log.of("start")) == 1


async def test_escalation_restarts_the_subtree_then_the_root_gives_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    inner = SupervisorSpec(intensity=1, period=100.0, backoff=NO_JITTER)
    root = SupervisorSpec(intensity=1, period=100.0, backoff=NO_JITTER)
    kids = [child(log, "sibling"), supervisor_child("inner", inner, [child(log, "w", ("crash", 1.0))])]
    with pytest.raises(IntensityExceeded) as info:
        await supervise(root, kids, name="root")
    assert log.of("start") == [
        ("start", "sibling", 0), ("start", "w", 0), ("start", "w", 1),
        ("start", "w", 2), ("start", "w", 3),  # inner gave up at 2; root restarted it at once
    ]  # fmt: skip
    assert trio.current_time() == 4
    assert log.of("cancelled") == [("cancelled", "sibling", 4)]
    assert info.value.data == {"supervisor": "root", "child": "inner"}
    cause = info.value.__cause__
    assert isinstance(cause, IntensityExceeded)
    assert cause.data == {"supervisor": "inner", "child": "w"}


async def test_a_restarted_subtree_is_visible_in_the_parents_statistics(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    inner = SupervisorSpec(intensity=0)
    kids = [supervisor_child("inner", inner, [child(log, "w", ("crash", 1.0), ("serve",))])]
    async with running(SupervisorSpec(), kids) as sup:
        await log.wait_for("start", "w", 2)
        await trio.testing.wait_all_tasks_blocked()  # the new inner supervisor has become ready
        (row,) = sup.statistics().children
        assert (row.id, row.type, row.state) == ("inner", ChildType.SUPERVISOR, ChildState.RUNNING)
        assert row.restarts == 1
        nested = sup.child("inner").handle
        assert isinstance(nested, Supervisor)
        assert nested.name == "inner"
        assert nested.child("w").handle == "w#2"
    assert trio.current_time() == 1


async def test_shutdown_timeout_is_enforced_for_a_shielded_child(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    kids = [child(log, "stubborn", cleanup=10.0, shutdown=2.0)]
    async with running(SupervisorSpec(), kids) as sup:
        await trio.sleep(1)
        await sup.terminate_child("stubborn")
        assert trio.current_time() == 3.0  # cancelled at 1, given up on at 1 + 2
        assert states(sup) == {"stubborn": ChildState.STOPPED}
        stats = sup.statistics()
        assert (stats.shutdown_timeouts, stats.lingering) == (1, 1)
        assert await log.wait_for("stopped", "stubborn") == 11.0
        assert sup.statistics().lingering == 0
    assert trio.current_time() == 11.0


async def test_a_stuck_child_delays_the_supervisors_own_exit_but_not_its_siblings_stop(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    kids = [child(log, "a"), child(log, "stubborn", cleanup=10.0, shutdown=2.0)]
    async with running(SupervisorSpec(), kids):
        await trio.sleep(1)
    assert log.of("cancelled", "stopped") == [
        ("cancelled", "stubborn", 1), ("cancelled", "a", 3), ("stopped", "a", 3),
        ("stopped", "stubborn", 11),
    ]  # fmt: skip
    assert trio.current_time() == 11.0  # trio cannot kill a task: the nursery waits for it


async def test_brutal_kill_does_not_wait(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    kids = [
        child(log, "shielded", cleanup=10.0, shutdown=BRUTAL_KILL),
        child(log, "plain", shutdown=BRUTAL_KILL),
    ]
    async with running(SupervisorSpec(), kids) as sup:
        await trio.sleep(1)
        await sup.terminate_child("shielded")
        await sup.terminate_child("plain")
        assert trio.current_time() == 1.0
        stats = sup.statistics()
        assert (stats.shutdown_timeouts, stats.lingering) == (0, 1)  # "plain" already unwound
        assert ("stopped", "plain", 1.0) in log.events


async def test_a_cancellation_during_a_restart_waits_for_the_start_then_stops_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    kids = [child(log, "a"), child(log, "slow", ("crash", 1.0), ("serve",), ready_after=1.0)]
    with trio.move_on_after(2.5):  # the restart begins at 2 and is ready at 3
        await supervise(SupervisorSpec(), kids)
    assert log.events[3:] == [
        ("crash", "slow", 2), ("start", "slow", 2), ("ready", "slow", 3),
        ("cancelled", "slow", 3), ("stopped", "slow", 3), ("cancelled", "a", 3), ("stopped", "a", 3),
    ]  # fmt: skip
    assert trio.current_time() == 3


async def test_dynamic_children_come_and_go(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    async with running(SupervisorSpec(), [child(log, "static")]) as sup:
        await trio.sleep(1)
        assert await sup.start_child(child(log, "s1", restart=RestartType.TEMPORARY)) == "s1#1"
        assert await sup.start_child(child(log, "s2", restart=RestartType.TRANSIENT)) == "s2#1"
        assert list(states(sup)) == ["static", "s1", "s2"]
        with pytest.raises(DuplicateChild) as dup:
            await sup.start_child(child(log, "s1"))
        assert isinstance(dup.value, BadRequest) and dup.value.code is ErrorCode.BAD_REQUEST

        await sup.terminate_child("s1")  # temporary: gone
        await sup.terminate_child("s2")  # transient: kept, stopped
        assert states(sup) == {"static": ChildState.RUNNING, "s2": ChildState.STOPPED}
        assert await sup.restart_child("s2") == "s2#2"
        with pytest.raises(ChildRunning):
            await sup.restart_child("s2")
        with pytest.raises(ChildRunning):
            await sup.delete_child("s2")
        await sup.terminate_child("s2")
        await sup.delete_child("s2")
        assert list(states(sup)) == ["static"]
        with pytest.raises(UnknownChild):
            await sup.terminate_child("s2")
        with pytest.raises(UnknownChild):
            sup.child("s2")

        await sup.start_child(child(log, "late"))
        await trio.sleep(1)
    assert log.of("cancelled")[-2:] == [("cancelled", "late", 2), ("cancelled", "static", 2)]
    with pytest.raises(ActorGone):
        await sup.start_child(child(log, "after"))
    assert sup.statistics().ended


async def test_a_dynamic_child_that_fails_to_start_is_not_added(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    async with running(SupervisorSpec(), []) as sup:
        with pytest.raises(Crash, match="cannot start"):
            await sup.start_child(child(log, "bad", ("fail",)))
        assert sup.which_children() == ()
        assert sup.statistics().restarts == 0


async def test_a_failed_restart_is_another_crash(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    spec = SupervisorSpec(intensity=5, period=100.0, backoff=NO_JITTER)
    kids = [child(log, "w", ("crash", 1.0), ("fail",), ("fail",), ("serve",))]
    async with running(spec, kids) as sup:
        assert await log.wait_for("start", "w", 4) == 2.5
        assert sup.child("w").handle == "w#4"
        assert sup.statistics().restarts == 3
    assert [t for _, _, t in log.of("start")] == [0, 1, 1.5, 2.5]


async def test_a_static_child_that_fails_to_start_fails_the_supervisor(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = Log()
    kids = [
        child(log, "a", cleanup=1.0),
        child(log, "b", cleanup=1.0),
        child(log, "bad", ("fail",)),
        child(log, "z"),
    ]
    async with trio.open_nursery() as nursery:
        with pytest.raises(Crash):
            await nursery.start(supervise, SupervisorSpec(), kids)
    assert log.of("cancelled") == [("cancelled", "b", 0), ("cancelled", "a", 1)]
    assert ("start", "z", 0) not in log.events
    assert trio.current_time() == 2


async def test_duplicate_static_ids_are_refused(autojump_clock: trio.testing.MockClock) -> None:
    log = Log()
    with pytest.raises(DuplicateChild):
        await supervise(SupervisorSpec(), [child(log, "x"), child(log, "x")])
    assert log.of("cancelled") == [("cancelled", "x", 0)]


async def test_a_child_that_returns_before_started_counts_as_a_normal_exit(
    autojump_clock: trio.testing.MockClock,
) -> None:
    runs: list[float] = []

    async def quick(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        runs.append(trio.current_time())
        await trio.sleep(1)

    spec = SupervisorSpec(intensity=2, period=100.0, backoff=NO_JITTER)
    with pytest.raises(IntensityExceeded):
        await supervise(spec, [ChildSpec(id="q", start=quick)])
    assert runs == [0, 1, 2.5]  # permanent: restarted after each normal exit, with backoff
    async with running(spec, [ChildSpec(id="q", start=quick, restart=RestartType.TRANSIENT)]) as sup:
        await trio.sleep(2)
        assert states(sup) == {"q": ChildState.STOPPED}


def test_spec_defaults_and_validation() -> None:
    async def noop(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    worker = ChildSpec(id="w", start=noop)
    assert (worker.restart, worker.type, worker.grace) == (RestartType.PERMANENT, ChildType.WORKER, 5.0)
    assert supervisor_child("s", SupervisorSpec()).grace == float("inf")
    assert ChildSpec(id="b", start=noop, shutdown=BRUTAL_KILL).grace == 0.0
    assert ChildSpec(id="g", start=noop, shutdown=1.5).grace == 1.5
    sup = SupervisorSpec()
    assert (sup.strategy, sup.intensity, sup.period) == (Strategy.ONE_FOR_ONE, 1, 5.0)
    for bad in ({"id": ""}, {"id": "x", "shutdown": -1.0}, {"id": "x", "shutdown": "never"}):
        with pytest.raises(ValueError):
            ChildSpec(start=noop, **bad)
    with pytest.raises(ValueError):
        SupervisorSpec(intensity=-1)


async def test_crashing_temporary_children_never_count_against_the_intensity(
        autojump_clock: trio.testing.MockClock) -> None:
    # The connection supervisor's shape: simple_one_for_one, intensity 0, temporary children.
    log = Log()
    spec = SupervisorSpec(strategy=Strategy.SIMPLE_ONE_FOR_ONE, intensity=0, period=1.0)
    async with running(spec) as sup:
        for n in range(5):
            await sup.start_child(child(log, f"c{n}", ("crash", 0.1), restart=RestartType.TEMPORARY))
        await log.wait_for("crash", "c4")
        await trio.testing.wait_all_tasks_blocked()
        stats = sup.statistics()
        assert (stats.restarts, stats.restarts_in_period, stats.children, stats.ended) == (0, 0, (), False)
        assert await sup.start_child(child(log, "after", restart=RestartType.TEMPORARY)) == "after#1"
        assert states(sup) == {"after": ChildState.RUNNING}
