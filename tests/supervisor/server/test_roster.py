"""The roster of connections: a connection enters it with its ``hello``'s name once welcomed,
and leaves it when it ends; a refused handshake never enters. Over memory streams, under the
autojump clock, through the real ``Connection`` shell.
"""

from __future__ import annotations

import json

import msgspec
import trio
import trio.testing
from trio_websocket import ConnectionClosed, wrap_client_stream, wrap_server_stream

from protocol.messages import ClientRequest, Empty
from protocol.models import ClientInfo, ConnectionInfo, DaemonInfo
from supervisor.server.connection import Connection
from supervisor.server.roster import Roster

TOKEN = "t0ken"


class _NoSessions:
    async def handle(self, request: ClientRequest, connection_id: str) -> msgspec.Struct:
        return Empty()

    def feed(self, session_id: str) -> object:
        raise AssertionError("no feeds here")


async def _serve(nursery: trio.Nursery, roster: Roster, hello: dict[str, object]) -> tuple[str, trio.Event]:
    """A connection entered in ``roster``, greeted with ``hello``; its first answer's type and an
    event set once the connection has ended (the client leaves right after that answer)."""
    client_stream, server_stream = trio.testing.memory_stream_pair()
    ended = trio.Event()

    async def serve() -> None:
        request = await wrap_server_stream(nursery, server_stream)  # type: ignore[arg-type]
        ws = await request.accept()
        connection = Connection(ws, _NoSessions(), token=TOKEN,  # type: ignore[arg-type]
                                info=DaemonInfo(version="0", pid=1), queue_size=16,
                                handshake_timeout=10, roster=roster)
        try:
            await connection.run()
        finally:
            ended.set()

    nursery.start_soon(serve)
    ws = await wrap_client_stream(nursery, client_stream, "localhost", "/v1")  # type: ignore[arg-type]
    await ws.send_message(json.dumps({"type": "hello", "protocol": 1, **hello}))
    answer = json.loads(await ws.get_message())
    if answer["type"] == "welcome":
        assert roster.infos() == [ConnectionInfo(connection_id=answer["connection_id"],
                                                 **hello.get("client", {"name": "unknown"}))]  # type: ignore[arg-type]
        assert roster.name(answer["connection_id"]) == roster.infos()[0].name
        await ws.aclose()
    else:
        try:
            await ws.get_message()
        except ConnectionClosed:
            pass
    return str(answer["type"]), ended


async def test_a_welcomed_connection_is_listed_with_its_name_until_it_ends(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    roster = Roster()
    kind, ended = await _serve(nursery, roster, {"token": TOKEN, "client": {"name": "browser", "version": "1"}})
    assert kind == "welcome"
    await ended.wait()
    assert roster.infos() == []


async def test_a_client_without_a_name_is_unknown_and_a_refused_one_is_never_listed(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    roster = Roster()
    kind, ended = await _serve(nursery, roster, {"token": TOKEN})
    assert kind == "welcome"
    await ended.wait()
    kind, ended = await _serve(nursery, roster, {"token": "wrong", "client": {"name": "x"}})
    assert kind == "error"
    await ended.wait()
    assert roster.infos() == []


def test_a_connection_that_is_gone_or_nameless_is_named_by_its_id() -> None:
    roster = Roster()
    roster.add("c-1", ClientInfo(name="", version="2"))
    assert roster.name("c-1") == "c-1"
    assert roster.name("c-9") == "c-9"
    roster.remove("c-1")
    roster.remove("c-1")  # idempotent
    assert roster.infos() == []
