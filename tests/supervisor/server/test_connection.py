"""The connection's trio shell over memory streams, under the autojump clock.

A scripted backend and in-memory feeds stand in for the application; the server end is the
daemon's own ``WebSocket``, the client a plain trio-websocket connection on the other end of the
stream, so the test sees the wire.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from typing import Any, cast

import msgspec
import pytest
import trio
import trio.testing
from trio_websocket import ConnectionClosed, WebSocketConnection, wrap_client_stream
from wsproto.frame_protocol import FrameProtocol

from protocol.errors import UnknownSession
from protocol.messages import ClientRequest, Empty, LoginCodeResult, SessionClose
from protocol.models import DaemonInfo
from supervisor.server.connection import FLUSH_TIMEOUT, Connection
from supervisor.server.websocket import WebSocket, _text_frame

TOKEN = "t0ken"


class MemoryFeed:
    """A session's feed held in a list; ``append`` wakes its listeners as the session's feed does."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.listeners: dict[Callable[[], None], None] = {}

    @property
    def last_seq(self) -> int:
        return len(self.frames)

    def read_from(self, from_seq: int) -> Iterator[bytes]:
        return iter(self.frames[max(from_seq, 1) - 1:])

    def append(self, text: str) -> None:
        self.frames.append(json.dumps({"type": "event", "session_id": "s", "seq": self.last_seq + 1,
                                       "ts": "t", "event": {"type": "assistant", "text": text,
                                                            "delta": False}}).encode())
        for wake in list(self.listeners):
            wake()

    def listen(self, wake: Callable[[], None]) -> None:
        self.listeners[wake] = None

    def unlisten(self, wake: Callable[[], None]) -> None:
        self.listeners.pop(wake, None)


class Backend:
    """One session ``s``; closing it appends its last events before the answer."""

    def __init__(self) -> None:
        self.feed_s = MemoryFeed()

    async def handle(self, request: ClientRequest, connection_id: str) -> msgspec.Struct:
        if isinstance(request, SessionClose):
            await trio.sleep(0.5)
            for text in ("exit", "closed"):
                self.feed_s.append(text)
        return Empty()

    def feed(self, session_id: str) -> MemoryFeed:
        if session_id != "s":
            raise UnknownSession(f"unknown session {session_id}")
        return self.feed_s


class Wire:
    """The client's end: requests by hand, every frame read in order."""

    def __init__(self, ws: WebSocketConnection, stream: trio.abc.Stream) -> None:
        self.ws = ws
        self.stream = stream

    async def send(self, **frame: Any) -> None:
        await self.ws.send_message(json.dumps(frame))

    async def receive(self) -> dict[str, Any]:
        return dict(json.loads(await self.ws.get_message()))

    async def until_closed(self) -> list[dict[str, Any]]:
        frames = []
        try:
            while True:
                frames.append(await self.receive())
        except ConnectionClosed:
            return frames


async def connect(nursery: trio.Nursery, backend: Backend, *, client_queue: int = 64,
                  lockstep: bool = False, writes: list[int] | None = None, by_cookie: bool = False,
                  token: str = TOKEN, socket_buffer: int | None = None
                  ) -> tuple[Wire, trio.CancelScope, trio.Event]:
    """A connection actor served in ``nursery`` and a greeted client; cancel the scope to stop it.

    ``writes`` (memory streams only) gets one entry per write the server makes to the stream.
    ``socket_buffer`` serves over a kernel socket pair with buffers that small instead (as the
    listener does: the writer then writes to the socket itself).
    """
    client_stream: trio.abc.Stream
    server_stream: trio.abc.Stream
    if socket_buffer is not None:
        ends = trio.socket.socketpair()
        for end in ends:
            end.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_SNDBUF, socket_buffer)
            end.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, socket_buffer)
        client_stream, server_stream = trio.SocketStream(ends[0]), trio.SocketStream(ends[1])
    else:
        pair = trio.testing.lockstep_stream_pair if lockstep else trio.testing.memory_stream_pair
        client_stream, server_stream = pair()
    if writes is not None:
        out = cast(trio.testing.MemorySendStream, getattr(server_stream, "send_stream"))
        pump = out.send_all_hook
        assert pump is not None

        async def count_and_pump() -> None:
            writes.append(1)
            await pump()

        out.send_all_hook = count_and_pump
    scope, done = trio.CancelScope(), trio.Event()

    async def serve() -> None:
        ws = WebSocket(server_stream, max_message=1 << 20)
        assert await ws.request() is not None
        await ws.accept()
        connection = Connection(ws, backend, token=TOKEN, info=DaemonInfo(version="0", pid=1),
                                queue_size=16, handshake_timeout=10, by_cookie=by_cookie,
                                login_code=lambda: LoginCodeResult(code="c0de", url="u", expires_in=60))
        try:
            with scope:
                await connection.run()
        finally:
            if connection.aborted:
                await trio.aclose_forcefully(server_stream)
            done.set()

    nursery.start_soon(serve)
    ws = await wrap_client_stream(nursery, client_stream, "localhost", "/v1",  # type: ignore[arg-type]
                                  message_queue_size=client_queue)
    wire = Wire(ws, client_stream)
    await wire.send(type="hello", protocol=1, token=token)
    assert (await wire.receive())["type"] == "welcome"
    return wire, scope, done


async def test_a_stopped_connection_sends_the_sessions_last_events_before_it_closes(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    backend = Backend()
    wire, scope, done = await connect(nursery, backend)
    await wire.send(type="session.subscribe", id=1, session_id="s")
    assert (await wire.receive())["result"] == {"last_seq": 0}
    backend.feed_s.append("running")
    assert (await wire.receive())["seq"] == 1
    await trio.testing.wait_all_tasks_blocked()
    # The session's close sequence writes its last events; the daemon stops the connection in
    # the same instant, while the pump and the writer are only just woken.
    for text in ("permission_decided", "exit", "closed"):
        backend.feed_s.append(text)
    scope.cancel()
    frames = await wire.until_closed()
    assert [(f["seq"], f["event"]["text"]) for f in frames] == [
        (2, "permission_decided"), (3, "exit"), (4, "closed")]
    assert wire.ws.closed is not None and wire.ws.closed.code == 1000
    await done.wait()


async def test_a_slow_client_still_gets_every_event_in_order_when_the_connection_stops(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    backend = Backend()
    # Lockstep: the writer blocks in the middle of a frame until the client reads.
    wire, scope, done = await connect(nursery, backend, client_queue=1, lockstep=True)
    await wire.send(type="session.subscribe", id=1, session_id="s")
    assert (await wire.receive())["result"] == {"last_seq": 0}
    for n in range(5):
        backend.feed_s.append(f"e{n}")
    await trio.testing.wait_all_tasks_blocked()
    for text in ("permission_decided", "exit", "closed"):
        backend.feed_s.append(text)
    scope.cancel()
    frames = await wire.until_closed()
    assert [f["seq"] for f in frames] == list(range(1, 9))
    assert [f["event"]["text"] for f in frames[-3:]] == ["permission_decided", "exit", "closed"]
    await done.wait()


async def test_events_queued_together_reach_the_client_in_one_write(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    # Each write wakes the client (and, on a loaded machine, costs the daemon its time slice):
    # a session's burst of events (a turn's last message, ``result``, ``idle``) is one write.
    backend = Backend()
    writes: list[int] = []
    wire, scope, _ = await connect(nursery, backend, writes=writes)
    await wire.send(type="session.subscribe", id=1, session_id="s")
    assert (await wire.receive())["type"] == "ok"
    await trio.testing.wait_all_tasks_blocked()
    writes.clear()
    for n in range(5):
        backend.feed_s.append(f"e{n}")
    frames = [await wire.receive() for _ in range(5)]
    assert [f["seq"] for f in frames] == [1, 2, 3, 4, 5]
    assert len(writes) == 1
    scope.cancel()


async def test_a_live_event_is_on_the_socket_when_its_session_publishes_it(nursery: trio.Nursery) -> None:
    # The feed's listener writes it from the session's task: the writer's task step, a pass of
    # the scheduler over every busy session and client, is not on the event's way.
    backend = Backend()
    wire, scope, _ = await connect(nursery, backend, socket_buffer=65536)
    await wire.send(type="session.subscribe", id=1, session_id="s")
    assert (await wire.receive())["type"] == "ok"
    await trio.testing.wait_all_tasks_blocked()
    fd = cast(trio.SocketStream, wire.stream).socket.fileno()
    backend.feed_s.append("now")  # no schedule point from here to the peek
    with socket.fromfd(fd, socket.AF_UNIX, socket.SOCK_STREAM) as client:
        on_the_wire = client.recv(65536, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    assert b'"text": "now"' in on_the_wire
    assert (await wire.receive())["event"]["text"] == "now"
    backend.feed_s.append("next")
    assert (await wire.receive())["event"]["text"] == "next"
    scope.cancel()


async def test_the_connection_stops_listening_to_a_feed_on_unsubscribe_and_on_its_end(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    # A feed lives as long as the daemon: a connection that left a listener behind would be
    # woken (and kept in memory) by every event of the session, for good.
    backend = Backend()
    wire, scope, done = await connect(nursery, backend)
    await wire.send(type="session.subscribe", id=1, session_id="s")
    assert (await wire.receive())["type"] == "ok"
    assert len(backend.feed_s.listeners) == 1
    await wire.send(type="session.subscribe", id=2, session_id="s")  # replaces the first
    assert (await wire.receive())["type"] == "ok"
    assert len(backend.feed_s.listeners) == 1
    await wire.send(type="session.unsubscribe", id=3, session_id="s")
    assert (await wire.receive())["type"] == "ok"
    assert backend.feed_s.listeners == {}
    await wire.send(type="session.subscribe", id=4, session_id="s")
    assert (await wire.receive())["type"] == "ok"
    backend.feed_s.append("live")
    assert (await wire.receive())["event"]["text"] == "live"
    scope.cancel()
    await done.wait()
    assert backend.feed_s.listeners == {}


async def test_a_client_that_does_not_read_is_closed_within_the_flush_bound(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    backend = Backend()
    wire, scope, done = await connect(nursery, backend, client_queue=1, lockstep=True)
    await wire.send(type="session.subscribe", id=1, session_id="s")
    assert (await wire.receive())["type"] == "ok"
    for n in range(10):  # more than the client buffers: the writer writes them in one burst
        backend.feed_s.append(f"e{n}" + "x" * 10_000)
    await trio.testing.wait_all_tasks_blocked()  # the writer is stuck on a client that reads nothing
    stopped = trio.current_time()
    scope.cancel()
    await done.wait()
    assert trio.current_time() - stopped == FLUSH_TIMEOUT


async def test_the_answer_to_a_request_follows_the_events_it_caused(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    backend = Backend()
    wire, scope, _ = await connect(nursery, backend)
    await wire.send(type="session.subscribe", id=1, session_id="s")
    assert (await wire.receive())["type"] == "ok"
    await wire.send(type="session.close", id=2, session_id="s")
    frames = [await wire.receive() for _ in range(3)]
    assert [f.get("seq", f["type"]) for f in frames] == [1, 2, "ok"]
    scope.cancel()


@pytest.mark.parametrize("frame", ['{"type": "session.get", "id": 3, "session_id": %s}'
                                   % ("[" * 2000 + "]" * 2000), b"\x00\xff"])
async def test_bad_frames_are_answered_and_the_connection_serves_on(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery, frame: str | bytes) -> None:
    wire, scope, _ = await connect(nursery, Backend())
    await wire.ws.send_message(frame)
    error = await wire.receive()
    assert (error["type"], error["code"]) == ("error", "bad_request")
    await wire.send(type="session.subscribe", id=4, session_id="nope")
    assert (await wire.receive())["code"] == "unknown_session"
    scope.cancel()


async def test_a_cookie_connection_needs_no_token_but_cannot_mint_login_codes(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    wire, _, _ = await connect(nursery, Backend(), by_cookie=True, token="")
    await wire.send(type="ui.login_code", id=1)
    assert (await wire.receive())["code"] == "unauthorized"
    await wire.send(type="session.subscribe", id=2, session_id="s")
    assert (await wire.receive())["result"] == {"last_seq": 0}


async def test_a_token_connection_mints_login_codes(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    wire, _, _ = await connect(nursery, Backend())
    await wire.send(type="ui.login_code", id=1)
    assert (await wire.receive())["result"] == {"code": "c0de", "url": "u", "expires_in": 60}


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 200_000])
def test_a_text_frame_is_what_wsproto_would_send(size: int) -> None:
    payload = ("é" * (size // 2) + "x" * (size % 2)).encode()
    assert _text_frame(payload) == FrameProtocol(client=False, extensions=[]).send_data(payload.decode(), fin=True)


async def test_events_of_every_frame_length_reach_the_client_intact(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    # The length field has three forms (7 bits, 16 bits, 64 bits); multi-byte UTF-8 counts in bytes.
    backend = Backend()
    wire, scope, _ = await connect(nursery, backend, client_queue=16)
    await wire.send(type="session.subscribe", id=1, session_id="s")
    assert (await wire.receive())["type"] == "ok"
    texts = ["", "é" * 30, "x" * 126, "ü" * 40_000, "y" * 70_000]
    for text in texts:
        backend.feed_s.append(text)
    assert [(await wire.receive())["event"]["text"] for _ in texts] == texts
    scope.cancel()


async def test_over_a_socket_that_takes_a_little_at_a_time_every_event_arrives_whole_and_in_order(
        nursery: trio.Nursery) -> None:
    # The writer writes to the socket itself while it has room and leaves the rest to trio:
    # a frame cut by a full socket buffer must go out whole before the next one.
    backend = Backend()
    texts = [f"{n}:" + "z" * (n * 997 % 20_000) for n in range(60)]
    for text in texts[:40]:  # replayed at subscribe (a replay waits for room)
        backend.feed_s.append(text)
    wire, scope, _ = await connect(nursery, backend, client_queue=4, socket_buffer=4096)
    await wire.send(type="session.subscribe", id=1, session_id="s")
    assert (await wire.receive())["type"] == "ok"
    with trio.fail_after(30):
        received = [(await wire.receive())["event"]["text"] for _ in texts[:40]]
        for first in range(40, 60, 5):  # live, a few at a time (the server's queue holds 16)
            for text in texts[first:first + 5]:
                backend.feed_s.append(text)
            received += [(await wire.receive())["event"]["text"] for _ in range(5)]
    assert received == texts
    scope.cancel()
