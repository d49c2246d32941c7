"""The roster of connections: a connection enters it with its ``hello``'s name once welcomed,
and leaves it when it ends; a refused handshake never enters. Over memory streams, under the
autojump clock, through the real ``Connection`` shell.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import trio
import trio.testing
from trio_websocket import WebSocketConnection, wrap_client_stream

from protocol.messages import ClientRequest, Empty
from protocol.models import ClientInfo, ConnectionInfo, DaemonInfo
from supervisor.server.connection import Connection
from supervisor.server.roster import Roster
from supervisor.server.websocket import WebSocket

TOKEN = "t0ken"


class _NoSessions:
    async def handle(self, request: ClientRequest, connection_id: str) -> msgspec.Struct:
        return Empty()

    def feed(self, session_id: str) -> object:
        raise AssertionError("no feeds here")


async def _serve(nursery: trio.Nursery, roster: Roster,
                 hello: dict[str, object]) -> tuple[dict[str, Any], WebSocketConnection, trio.Event]:
    """A connection entered in ``roster`` and greeted with ``hello``: the first answer, the
    client's websocket, and an event set once the connection has ended."""
    client_stream, server_stream = trio.testing.memory_stream_pair()
    ended = trio.Event()

    async def serve() -> None:
        ws = WebSocket(server_stream, max_message=1 << 20)
        assert await ws.request() is not None
        await ws.accept()
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
    return json.loads(await ws.get_message()), ws, ended


async def test_a_welcomed_connection_is_listed_with_its_name_until_it_ends(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    roster = Roster()
    welcome, ws, ended = await _serve(nursery, roster, {"token": TOKEN,
                                                        "client": {"name": "browser", "version": "1"}})
    cid = welcome["connection_id"]
    assert roster.infos() == [ConnectionInfo(connection_id=cid, name="browser", version="1")]
    assert roster.name(cid) == "browser"
    await ws.aclose()
    await ended.wait()
    assert roster.infos() == [] and roster.name(cid) == cid


async def test_a_client_without_a_name_is_unknown_and_a_refused_one_is_never_listed(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    roster = Roster()
    welcome, ws, ended = await _serve(nursery, roster, {"token": TOKEN})
    assert roster.infos() == [ConnectionInfo(connection_id=welcome["connection_id"], name="unknown")]
    await ws.aclose()
    await ended.wait()
    refused, _, ended = await _serve(nursery, roster, {"token": "wrong", "client": {"name": "x"}})
    assert refused["type"] == "error"
    await ended.wait()
    assert roster.infos() == []


def test_a_nameless_connection_is_named_by_its_id() -> None:
    roster = Roster()
    roster.add("c-1", ClientInfo(name="", version="2"))
    assert roster.name("c-1") == "c-1"
    roster.remove("c-1")
    roster.remove("c-1")  # idempotent
    assert roster.infos() == []
