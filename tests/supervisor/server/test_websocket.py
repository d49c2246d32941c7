"""The daemon's own server websocket against a trio-websocket client (or hand-made frames),
over memory streams: the upgrade, control frames, the limits and every way of closing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing
from trio_websocket import ConnectionClosed as ClientClosed
from trio_websocket import WebSocketConnection, wrap_client_stream
from wsproto.frame_protocol import FrameProtocol, Opcode

from supervisor.server.websocket import ConnectionClosed, WebSocket

LIMIT = 1000
_UPGRADE = (b"GET /v1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


@asynccontextmanager
async def pair(nursery: trio.Nursery) -> AsyncIterator[tuple[WebSocket, WebSocketConnection]]:
    """An accepted server websocket and the trio-websocket client at its other end."""
    client_stream, server_stream = trio.testing.memory_stream_pair()
    server = WebSocket(server_stream, max_message=LIMIT)

    async def upgrade() -> None:
        request = await server.request()
        assert request is not None and request.target == "/v1" and request.host == "localhost"
        await server.accept()

    nursery.start_soon(upgrade)
    client = await wrap_client_stream(nursery, client_stream, "localhost", "/v1")  # type: ignore[arg-type]
    yield server, client


async def raw_pair() -> tuple[WebSocket, trio.testing.MemoryStreamPair]:
    """An accepted server websocket and the raw client stream (frames made by hand)."""
    client, server_stream = trio.testing.memory_stream_pair()
    server = WebSocket(server_stream, _UPGRADE, max_message=LIMIT)
    assert await server.request() is not None
    await server.accept()
    head = b""
    while b"\r\n\r\n" not in head:
        head += await client.receive_some()
    assert head.startswith(b"HTTP/1.1 101 ")
    return server, client


async def test_messages_go_both_ways_and_a_burst_is_one_write(nursery: trio.Nursery) -> None:
    async with pair(nursery) as (server, client):
        await client.send_message('{"n": 1}')
        await client.send_message(b"\x00\x01")
        assert await server.receive() == '{"n": 1}'
        assert await server.receive() == b"\x00\x01"
        await server.send_text([b'{"a": 1}', "é".encode() * 200, b"{}"])
        assert [await client.get_message() for _ in range(3)] == ['{"a": 1}', "é" * 200, "{}"]


async def test_a_ping_is_answered_while_the_server_reads(nursery: trio.Nursery) -> None:
    async with pair(nursery) as (server, client):
        nursery.start_soon(server.receive)
        with trio.fail_after(5):
            await client.ping(b"are you there")  # returns on the matching pong


async def test_a_fragmented_message_is_put_together() -> None:
    server, client = await raw_pair()
    frames = FrameProtocol(client=True, extensions=[])
    await client.send_all(frames.send_data("hel", fin=False) + frames.send_data("lo", fin=True))
    assert await server.receive() == "hello"


async def test_the_limit_counts_the_whole_message_and_answers_frame_too_large(nursery: trio.Nursery) -> None:
    server, client = await raw_pair()
    frames = FrameProtocol(client=True, extensions=[])
    await client.send_all(frames.send_data("x" * 600, fin=False) + frames.send_data("y" * 600, fin=True))
    with pytest.raises(ConnectionClosed) as closed:
        await server.receive()
    assert (closed.value.code, closed.value.reason) == (1009, "frame_too_large")
    reader = FrameProtocol(client=True, extensions=[])
    got = []
    while len(got) < 2:
        reader.receive_bytes(await client.receive_some())
        got += list(reader.received_frames())
    error = json.loads(got[0].payload)
    assert (got[0].opcode, error["type"], error["code"]) == (Opcode.TEXT, "error", "frame_too_large")
    assert (got[1].opcode, got[1].payload) == (Opcode.CLOSE, (1009, "frame_too_large"))
    with pytest.raises(ConnectionClosed):
        await server.send_text([b"{}"])


async def test_a_message_at_the_limit_is_taken(nursery: trio.Nursery) -> None:
    async with pair(nursery) as (server, client):
        await client.send_message("z" * LIMIT)
        assert await server.receive() == "z" * LIMIT


async def test_a_text_frame_that_is_not_utf8_closes_with_1007(nursery: trio.Nursery) -> None:
    server, client = await raw_pair()
    # A masked text frame (zero mask: the payload as is) holding an invalid UTF-8 byte.
    await client.send_all(bytes((0x81, 0x80 | 2)) + b"\0\0\0\0" + b"a\xff")
    with pytest.raises(ConnectionClosed) as closed:
        await server.receive()
    assert closed.value.code == 1007
    reader = FrameProtocol(client=True, extensions=[])
    reader.receive_bytes(await client.receive_some())
    (frame,) = reader.received_frames()
    assert frame.opcode is Opcode.CLOSE and frame.payload[0] == 1007


async def test_the_clients_close_is_echoed_and_ends_receive(nursery: trio.Nursery) -> None:
    async with pair(nursery) as (server, client):
        nursery.start_soon(client.aclose, 4000, "bye")
        with pytest.raises(ConnectionClosed) as closed:
            await server.receive()
        assert (closed.value.code, closed.value.reason) == (4000, "bye")
        with trio.fail_after(5):
            while client.closed is None:
                await trio.sleep(0.01)
        assert client.closed.code == 4000


async def test_our_close_waits_for_the_echo_and_the_client_hears_the_code(nursery: trio.Nursery) -> None:
    async with pair(nursery) as (server, client):
        with trio.fail_after(5):
            await server.aclose(1008, "client_not_reading")
        with pytest.raises(ClientClosed) as closed:
            await client.get_message()
        assert (closed.value.reason.code, closed.value.reason.reason) == (1008, "client_not_reading")
        with pytest.raises(ConnectionClosed):
            await server.receive()
        await server.aclose()  # idempotent


async def test_a_stream_that_ends_is_an_abnormal_closure() -> None:
    server, client = await raw_pair()
    await client.aclose()
    with pytest.raises(ConnectionClosed) as closed:
        await server.receive()
    assert closed.value.code == 1006


async def test_a_refused_upgrade_gets_its_status_and_body() -> None:
    client, server_stream = trio.testing.memory_stream_pair()
    server = WebSocket(server_stream, _UPGRADE, max_message=LIMIT)
    assert await server.request() is not None
    await server.reject(403, b"origin 'x' is not allowed")
    with pytest.raises(ConnectionClosed):
        await server.receive()
    await server.aclose()
    response = b""
    while chunk := await client.receive_some():
        response += chunk
    assert response.startswith(b"HTTP/1.1 403 ")
    assert response.endswith(b"\r\n\r\norigin 'x' is not allowed")


async def test_a_malformed_upgrade_is_answered_400_and_gives_no_request() -> None:
    client, server_stream = trio.testing.memory_stream_pair()
    server = WebSocket(server_stream, _UPGRADE.replace(b"Sec-WebSocket-Key", b"X-Key"), max_message=LIMIT)
    assert await server.request() is None
    assert (await client.receive_some()).startswith(b"HTTP/1.1 400 ")
