"""The connection core, driven synchronously: frames in, frames out, no trio and no sockets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from protocol.errors import UnknownSession
from protocol.models import DaemonInfo
from supervisor.server.connection_core import Closing, ConnectionCore, LocalProtocolError, Offer, Phase

TOKEN = "secret"
HELLO = json.dumps({"type": "hello", "protocol": 1, "token": TOKEN})
DEEP = "[" * 3000 + "]" * 3000


def core(queue_size: int = 8, hard_limit: int | None = None) -> ConnectionCore:
    return ConnectionCore("c-1", token=TOKEN, info=DaemonInfo(version="0", pid=1),
                          queue_size=queue_size, hard_limit=hard_limit)


def opened(queue_size: int = 8, hard_limit: int | None = None) -> ConnectionCore:
    conn = core(queue_size, hard_limit)
    assert conn.receive_hello(HELLO)
    assert out(conn)[0]["type"] == "welcome"
    return conn


def out(conn: ConnectionCore) -> list[dict[str, Any]]:
    """Every frame the core hands out now, decoded."""
    return [json.loads(frame) for frame in iter(conn.next_frame, None)]


def event(seq: int) -> bytes:
    return json.dumps({"type": "event", "session_id": "s", "seq": seq, "ts": "t",
                       "event": {"type": "assistant", "text": str(seq), "delta": True}}).encode()


def kinds(frames: list[dict[str, Any]]) -> list[str]:
    return [f"{f['type']}:{f.get('seq', f.get('id', f.get('last_seq', '')))}" for f in frames]


# --- handshake -----------------------------------------------------------------------------------


def test_a_good_hello_is_welcomed_and_opens_the_connection() -> None:
    conn = core()
    assert conn.receive_hello(HELLO)
    [welcome] = out(conn)
    assert welcome["type"] == "welcome" and welcome["connection_id"] == "c-1"
    assert (conn.phase, conn.closing) == (Phase.OPEN, None)


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (json.dumps({"type": "hello", "protocol": 1, "token": "wrong"}), "unauthorized"),
        (json.dumps({"type": "hello", "protocol": 1}), "unauthorized"),
        (json.dumps({"type": "hello", "protocol": 1, "token": None}), "unauthorized"),
        (json.dumps({"type": "hello", "protocol": 1, "token": 42}), "unauthorized"),
        (json.dumps({"type": "hello", "protocol": 7, "token": TOKEN}), "unsupported_protocol"),
        (json.dumps({"type": "daemon.status", "id": 1}), "bad_handshake"),
        ('{"type": "hello", "protocol": 1, "token": "wrong", "x": %s}' % DEEP, "bad_handshake"),
        (HELLO.encode(), "bad_handshake"),
        (b"\xff\xfe", "bad_handshake"),
    ],
    ids=["wrong", "missing", "null", "int", "version", "other", "deep", "binary", "garbage"],
)
def test_a_bad_first_frame_gets_one_error_and_closes(frame: str | bytes, code: str) -> None:
    conn = core()
    assert not conn.receive_hello(frame)
    [error] = out(conn)
    assert error == {"type": "error", "id": None, "code": code, "message": error["message"]}
    assert error["message"]
    assert conn.phase is Phase.CLOSING
    assert conn.closing == Closing(1008, code)
    with pytest.raises(LocalProtocolError):
        conn.receive_request(json.dumps({"type": "daemon.status", "id": 1}))


def test_a_handshake_that_never_comes_is_refused_with_the_given_error() -> None:
    from protocol.errors import BadHandshake

    conn = core()
    conn.refuse(BadHandshake("no hello within 10 s"))
    assert kinds(out(conn)) == ["error:None"]
    assert conn.closing == Closing(1008, "bad_handshake")


def test_requests_before_the_handshake_are_a_local_error() -> None:
    with pytest.raises(LocalProtocolError):
        core().receive_request(json.dumps({"type": "daemon.status", "id": 1}))


# --- requests ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "code", "request_id"),
    [
        ("not json", "bad_request", None),
        ('{"type": "session.get", "id": 4, "session_id": %s}' % DEEP, "bad_request", None),
        ('{"type": "daemon.status", "id": 5, "x": {"y": %s}}' % DEEP, "bad_request", None),
        (b'{"type": "daemon.status", "id": 6}', "bad_request", 6),
        (b"\xc3\x28\x00", "bad_request", None),
        ('{"type": "session.get", "id": 7, "session_id": 1}', "bad_request", 7),
        ('{"type": "nope", "id": 8}', "unknown_method", 8),
        ('{"type": "session.get", "id": 9, "session_id": "a\\u0000b"}', None, 9),
    ],
    ids=["json", "deep", "deep-unknown", "binary", "utf8", "type", "method", "nul"],
)
def test_a_frame_that_cannot_be_served_is_answered_and_the_connection_stays(
        frame: str | bytes, code: str | None, request_id: int | None) -> None:
    conn = opened()
    request = conn.receive_request(frame)
    if code is None:
        assert request is not None and request.id == request_id  # decodes; the backend decides
        return
    assert request is None
    [error] = out(conn)
    assert (error["type"], error["code"], error["id"]) == ("error", code, request_id)
    assert conn.phase is Phase.OPEN
    assert conn.receive_request(json.dumps({"type": "daemon.status", "id": 10})) is not None


def test_answers_and_errors_carry_the_request_id() -> None:
    conn = opened()
    conn.answer(1, {"x": 1})
    conn.fail(2, UnknownSession("no such session", data={"session_id": "s"}))
    assert out(conn) == [
        {"type": "ok", "id": 1, "result": {"x": 1}},
        {"type": "error", "id": 2, "code": "unknown_session", "message": "no such session",
         "data": {"session_id": "s"}},
    ]


def test_a_client_that_reads_nothing_is_closed_and_answers_stop() -> None:
    conn = opened(queue_size=1, hard_limit=3)
    for request_id in range(3):
        conn.answer(request_id, {})
    assert conn.closing is None
    conn.answer(3, {})
    assert conn.phase is Phase.CLOSING and conn.closing == Closing(1008, "client_not_reading")
    conn.answer(4, {})  # an in-flight request finishing late: nothing more is queued
    assert kinds(out(conn)) == ["ok:0", "ok:1", "ok:2"]


# --- subscriptions -------------------------------------------------------------------------------


def test_the_ok_of_subscribe_comes_before_every_event_of_the_subscription() -> None:
    conn = opened()
    sub = conn.subscribe(1, "s", from_seq=0, last_seq=2)
    assert [conn.offer(sub, event(n)) for n in (1, 2)] == [Offer.QUEUED, Offer.QUEUED]
    conn.replayed(sub)
    assert conn.offer(sub, event(3)) is Offer.QUEUED
    frames = out(conn)
    assert kinds(frames) == ["ok:1", "event:1", "event:2", "event:3"]
    assert frames[0]["result"] == {"last_seq": 2}


def test_subscribing_again_drops_the_old_subscription_and_its_queued_events() -> None:
    conn = opened()
    old = conn.subscribe(1, "s", from_seq=0, last_seq=2)
    conn.offer(old, event(1))
    new = conn.subscribe(2, "s", from_seq=5, last_seq=6)
    assert conn.offer(old, event(2)) is Offer.ENDED
    assert new.cursor == 5
    conn.offer(new, event(5))
    assert kinds(out(conn)) == ["ok:1", "ok:2", "event:5"]


def test_a_replay_waits_for_room_instead_of_lagging() -> None:
    conn = opened(queue_size=2)
    sub = conn.subscribe(1, "s", from_seq=1, last_seq=5)
    assert [conn.offer(sub, event(n)) for n in (1, 2)] == [Offer.QUEUED, Offer.QUEUED]
    assert conn.offer(sub, event(3)) is Offer.FULL
    assert not conn.has_room() and sub.cursor == 3
    assert kinds([json.loads(conn.next_frame() or b"")]) == ["ok:1"]
    assert kinds([json.loads(conn.next_frame() or b"")]) == ["event:1"]
    assert conn.has_room()
    assert conn.offer(sub, event(3)) is Offer.QUEUED
    assert kinds(out(conn)) == ["event:2", "event:3"]


def test_a_live_event_that_does_not_fit_lags_then_nothing_until_subscribing_again() -> None:
    conn = opened(queue_size=2)
    sub = conn.subscribe(1, "s", from_seq=0, last_seq=0)
    conn.replayed(sub)
    conn.offer(sub, event(1))
    conn.offer(sub, event(2))
    assert kinds([json.loads(conn.next_frame() or b"") for _ in range(2)]) == ["ok:1", "event:1"]
    assert conn.offer(sub, event(3)) is Offer.QUEUED
    assert conn.offer(sub, event(4)) is Offer.LAGGED  # events 2 and 3 make way for the marker
    assert conn.offer(sub, event(5)) is Offer.ENDED
    assert conn.subscriptions() == [] and conn.caught_up("s", 99)
    conn.answer(2, {})
    assert out(conn) == [{"type": "lagged", "session_id": "s", "last_seq": 1},
                         {"type": "ok", "id": 2, "result": {}}]
    again = conn.subscribe(3, "s", from_seq=2, last_seq=5)
    assert conn.offer(sub, event(2)) is Offer.ENDED
    assert conn.offer(again, event(2)) is Offer.QUEUED
    assert kinds(out(conn)) == ["ok:3", "event:2"]


def test_lagged_reports_the_last_event_written_even_before_any() -> None:
    conn = opened(queue_size=1)
    sub = conn.subscribe(1, "s", from_seq=7, last_seq=9)
    conn.replayed(sub)
    conn.offer(sub, event(7))
    assert conn.offer(sub, event(8)) is Offer.LAGGED
    assert out(conn)[1:] == [{"type": "lagged", "session_id": "s", "last_seq": 6}]


def test_unsubscribe_drops_queued_events_and_a_pending_lagged() -> None:
    conn = opened(queue_size=1)
    lagging = conn.subscribe(1, "a", from_seq=0, last_seq=0)
    kept = conn.subscribe(2, "b", from_seq=0, last_seq=0)
    conn.replayed(lagging)
    conn.offer(lagging, event(1))
    conn.offer(lagging, event(2))  # lagged: a's marker is queued
    conn.unsubscribe(3, "a")
    assert conn.offer(kept, event(1)) is Offer.QUEUED
    assert kinds(out(conn)) == ["ok:1", "ok:2", "ok:3", "event:1"]
    assert [s.session_id for s in conn.subscriptions()] == ["b"]


def test_unsubscribe_of_a_session_not_followed_still_answers() -> None:
    conn = opened()
    conn.unsubscribe(1, "s")
    assert out(conn) == [{"type": "ok", "id": 1, "result": {}}]


def test_caught_up_follows_the_cursor() -> None:
    conn = opened()
    assert conn.caught_up("s", 10)  # not subscribed: nothing to wait for
    sub = conn.subscribe(1, "s", from_seq=0, last_seq=2)
    assert not conn.caught_up("s", 2)
    conn.offer(sub, event(1))
    conn.offer(sub, event(2))
    assert conn.caught_up("s", 2) and not conn.caught_up("s", 3)


def test_on_change_fires_for_output_room_and_closing() -> None:
    calls: list[int] = []
    conn = ConnectionCore("c-1", token=TOKEN, info=DaemonInfo(version="0", pid=1), queue_size=1,
                          hard_limit=2, on_change=lambda: calls.append(conn.queued))
    conn.receive_hello(HELLO)
    sub = conn.subscribe(1, "s", from_seq=0, last_seq=0)
    conn.offer(sub, event(1))
    conn.next_frame()
    assert calls == [1, 2, 3, 2]
    conn.answer(2, {})
    conn.answer(3, {})  # past the hard limit
    assert conn.closing is not None and len(calls) >= 5


def test_a_cookie_connection_is_welcomed_without_the_token_and_knows_it() -> None:
    conn = ConnectionCore("c-1", token=TOKEN, info=DaemonInfo(version="0", pid=1), queue_size=8,
                          by_cookie=True)
    assert conn.receive_hello(json.dumps({"type": "hello", "protocol": 1, "token": ""}))
    assert out(conn)[0]["type"] == "welcome" and not conn.token_given
    plain = core()
    assert not plain.receive_hello(json.dumps({"type": "hello", "protocol": 1, "token": ""}))
    assert out(plain)[0]["code"] == "unauthorized"
