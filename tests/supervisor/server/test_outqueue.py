"""The outgoing queue lags a session instead of growing, and never drops an answer."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from supervisor.server.outqueue import OutQueue, QueueOverflow


def test_events_fit_up_to_capacity_then_refuse() -> None:
    queue = OutQueue(2)
    assert queue.put_event("s", 1, b"1") and queue.put_event("s", 2, b"2")
    assert not queue.put_event("s", 3, b"3")
    assert queue.events_queued == 2


async def test_lagged_replaces_the_sessions_queued_events_but_keeps_others() -> None:
    queue = OutQueue(3)
    queue.put_event("a", 1, b"a1")
    queue.put_event("b", 1, b"b1")
    queue.put_control(b"ok")
    queue.put_event("a", 2, b"a2")
    queue.put_lagged("a")
    got = [await queue.get() for _ in range(len(queue))]
    assert [(i.frame, i.session_id) for i in got] == [(b"b1", "b"), (b"ok", None), (None, "a")]
    assert queue.events_queued == 0


def test_control_frames_bypass_capacity_up_to_the_hard_limit() -> None:
    queue = OutQueue(1, hard_limit=3)
    queue.put_event("s", 1, b"e")
    queue.put_control(b"r1")
    queue.put_control(b"r2")
    with pytest.raises(QueueOverflow):
        queue.put_control(b"r3")


async def test_wait_room_and_drained_wake_when_the_writer_takes_frames(autojump_clock: trio.testing.MockClock) -> None:
    queue = OutQueue(1)
    queue.put_event("s", 1, b"e")
    order: list[str] = []

    async def waiter() -> None:
        await queue.wait_room()
        order.append(f"room at {trio.current_time()}")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.sleep(1)
        assert order == []
        await queue.get()
    assert order == ["room at 1.0"]
    with trio.fail_after(1):
        await queue.drained()


async def test_resubscribing_drops_a_pending_lagged_marker_too() -> None:
    queue = OutQueue(2)
    queue.put_event("a", 1, b"a1")
    queue.put_lagged("a")
    queue.put_control(b"ok")
    queue.drop_session("a", markers=True)
    assert [(await queue.get()).frame for _ in range(len(queue))] == [b"ok"]
