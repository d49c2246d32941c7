"""The shared fsync thread: calls queued while a batch runs go in the next batch, each caller
gets its own outcome, a cancelled caller does not stop its call or anyone else's; and the
flushers of several logs fire on one shared tick."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from actors.session import syncer
from actors.session.eventlog import EventLog
from protocol.events import Assistant

T0 = 1_700_000_000.0


def test_next_tick_is_the_first_multiple_after_now() -> None:
    assert syncer.next_tick(0.0, 0.1) == pytest.approx(0.1)
    assert syncer.next_tick(0.03, 0.1) == pytest.approx(0.1)
    assert syncer.next_tick(0.1, 0.1) == pytest.approx(0.2)
    assert syncer.next_tick(12.34, 0.25) == pytest.approx(12.5)
    for now in (0.0, 0.05, 0.099, 7.3):
        assert now < syncer.next_tick(now, 0.1) <= now + 0.1 + 1e-9


async def test_calls_queued_during_a_batch_run_together_in_the_next_one() -> None:
    release = threading.Event()
    ran: list[tuple[str, int]] = []

    def blocker() -> None:
        release.wait(10)
        ran.append(("first", threading.get_ident()))

    def call(name: str) -> Callable[[], None]:
        return lambda: ran.append((name, threading.get_ident()))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(syncer.batched, blocker)
            await trio.testing.wait_all_tasks_blocked()
            for name in ("a", "b", "c"):
                nursery.start_soon(syncer.batched, call(name))
            await trio.testing.wait_all_tasks_blocked()
            assert ran == []  # the first batch still runs; the others wait their turn
            release.set()
    assert ran[0][0] == "first" and sorted(name for name, _ in ran[1:]) == ["a", "b", "c"]
    assert len({ident for _, ident in ran}) == 1  # one thread drained both batches
    assert threading.get_ident() not in {ident for _, ident in ran}


async def test_each_caller_gets_its_own_error() -> None:
    def boom() -> None:
        raise OSError(5, "disk gone")

    done: list[str] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            async def fine() -> None:
                await syncer.batched(lambda: None)
                done.append("fine")

            nursery.start_soon(fine)
            with pytest.raises(OSError, match="disk gone"):
                await syncer.batched(boom)
    assert done == ["fine"]


async def test_a_cancelled_caller_stops_waiting_but_its_call_and_the_others_still_run() -> None:
    release = threading.Event()
    ran: list[str] = []

    def slow() -> None:
        release.wait(10)
        ran.append("slow")

    with trio.fail_after(10):
        with trio.move_on_after(0.05) as scope:
            await syncer.batched(slow)
        assert scope.cancelled_caught and ran == []
        release.set()
        await syncer.batched(lambda: ran.append("next"))  # queued behind it, same thread
    assert ran == ["slow", "next"]


async def test_flushers_of_several_logs_fsync_on_one_shared_tick(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    times: dict[str, list[float]] = {"a": [], "b": []}

    async def inline(call: Callable[[], None]) -> None:
        call()

    def recorder(name: str) -> Callable[[int], None]:
        return lambda fd: times[name].append(trio.current_time())

    logs = {name: EventLog.open(tmp_path / name, f"s-{name}", fsync=recorder(name), offload=inline,
                                fsync_interval=0.1)[0] for name in times}
    async with trio.open_nursery() as nursery:
        for log in logs.values():
            await nursery.start(log.run_flusher)
        await trio.sleep(0.03)
        logs["a"].append(Assistant(text="x"), now=T0)
        await trio.sleep(0.04)
        logs["b"].append(Assistant(text="y"), now=T0)
        await trio.sleep(0.5)
        nursery.cancel_scope.cancel()
    for log in logs.values():
        log.close()
    # written at 0.03 and at 0.07: both synced at the tick of 0.1, each within 0.1 of its write
    assert times["a"] == pytest.approx([0.1]) and times["b"] == pytest.approx([0.1])
