"""The outgoing queue lags a session instead of growing, and never drops an answer."""

from __future__ import annotations

import pytest

from supervisor.server.outqueue import OutQueue, QueueOverflow


def test_events_fit_up_to_capacity_then_refuse() -> None:
    queue = OutQueue(2)
    assert queue.put_event("s", 1, b"1") and queue.put_event("s", 2, b"2")
    assert not queue.put_event("s", 3, b"3")
    assert queue.events_queued == 2


def test_lagged_replaces_the_sessions_queued_events_but_keeps_others() -> None:
    queue = OutQueue(3)
    queue.put_event("a", 1, b"a1")
    queue.put_event("b", 1, b"b1")
    queue.put_control(b"ok")
    queue.put_event("a", 2, b"a2")
    queue.put_lagged("a")
    got = [queue.pop() for _ in range(len(queue))]
    assert [(i.frame, i.session_id) for i in got if i is not None] == [(b"b1", "b"), (b"ok", None), (None, "a")]
    assert queue.events_queued == 0
    assert queue.pop() is None


def test_control_frames_bypass_capacity_up_to_the_hard_limit() -> None:
    queue = OutQueue(1, hard_limit=3)
    queue.put_event("s", 1, b"e")
    queue.put_control(b"r1")
    queue.put_control(b"r2")
    with pytest.raises(QueueOverflow):
        queue.put_control(b"r3")


def test_popping_an_event_makes_room() -> None:
    queue = OutQueue(1)
    queue.put_event("s", 1, b"e")
    queue.put_control(b"r")
    assert not queue.has_room()
    item = queue.pop()
    assert item is not None and item.frame == b"e"
    assert queue.has_room() and len(queue) == 1


def test_resubscribing_drops_a_pending_lagged_marker_too() -> None:
    queue = OutQueue(2)
    queue.put_event("a", 1, b"a1")
    queue.put_lagged("a")
    queue.put_control(b"ok")
    queue.drop_session("a", markers=True)
    assert [item.frame for item in iter(queue.pop, None)] == [b"ok"]
