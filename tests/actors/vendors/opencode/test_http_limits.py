"""The OpenCode HTTP client is bounded like a child's stdout: a response body or one event of
the stream past ``limit`` bytes is an ``HttpError``, not unbounded memory. The server here is a
canned HTTP/1.1 responder on a loopback socket of this process."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from actors.vendors.opencode.http import HttpClient, HttpError, SseParser


def test_an_event_at_the_limit_passes_and_one_past_it_is_refused() -> None:
    assert SseParser(limit=10).feed(b"data: 1234567890\n\n") == [b"1234567890"]
    assert SseParser(limit=10).feed(b"data: 1234\ndata: 56789\n\n") == [b"1234\n56789"]
    with pytest.raises(HttpError, match="exceeds 10 bytes"):
        SseParser(limit=10).feed(b"data: 1234\ndata: 56789\ndata: x\n")  # one event, three lines
    endless = SseParser(limit=10)
    assert endless.feed(b"data: 1234") == []
    with pytest.raises(HttpError, match="exceeds 10 bytes"):
        endless.feed(b"5x")  # no newline ever: the unfinished line counts too


def test_events_completed_before_the_overflow_are_handed_out_first() -> None:
    parser = SseParser(limit=10)
    assert parser.feed(b"data: ok\n\ndata: " + b"z" * 20) == [b"ok"]
    with pytest.raises(HttpError):
        parser.feed(b"\n\n")


def test_the_limit_is_per_event() -> None:
    parser = SseParser(limit=10)
    for _ in range(100):
        assert parser.feed(b"data: 12345678\n\n") == [b"12345678"]


@asynccontextmanager
async def canned(response: bytes) -> AsyncIterator[int]:
    """A loopback server answering every connection with ``response``; yields its port."""

    async def serve(stream: trio.SocketStream) -> None:
        async with stream:
            await stream.receive_some(65536)
            await stream.send_all(response)

    async with trio.open_nursery() as nursery:
        [listener] = await nursery.start(functools.partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
        yield listener.socket.getsockname()[1]
        nursery.cancel_scope.cancel()


def _response(body: bytes, content_type: bytes = b"application/json") -> bytes:
    return (b"HTTP/1.1 200 OK\r\ncontent-type: " + content_type + b"\r\ncontent-length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)


async def test_a_response_body_past_the_limit_is_an_http_error() -> None:
    with trio.fail_after(10):
        async with canned(_response(b"x" * 2000)) as port:
            assert await HttpClient("127.0.0.1", port, limit=2000).request("GET", "/a") == (200, b"x" * 2000)
            with pytest.raises(HttpError, match="GET /a: the response body exceeds 1999 bytes"):
                await HttpClient("127.0.0.1", port, limit=1999).request("GET", "/a")


async def test_an_event_stream_event_past_the_limit_is_an_http_error() -> None:
    stream = b"data: small\n\n" + b"data: " + b"y" * 5000 + b"\n\n"
    seen: list[bytes] = []
    with trio.fail_after(10):
        async with canned(_response(stream, b"text/event-stream")) as port:
            with pytest.raises(HttpError, match="exceeds 1000 bytes"):
                async for data in HttpClient("127.0.0.1", port, limit=1000).events("/global/event"):
                    seen.append(data)
    assert seen == [b"small"]
