"""A small HTTP/1.1 client on trio and h11, for one local ``opencode serve``: requests and SSE.

Why not httpx: the server is on loopback, every body is small JSON, and the one long response
is the event stream; h11 (sans-IO, already a dependency of the test fakes) on a trio socket is a
hundred lines with no connection-pool or anyio layer between a cancel scope and the socket.

``HttpClient.request`` sends one request on an idle keep-alive connection (a new one if none is
idle) and returns ``(status, body)``; a connection that did not finish its exchange cleanly is
dropped. ``HttpClient.events`` opens a dedicated connection for a ``text/event-stream`` GET and
yields each event's data (``SseParser`` joins its ``data:`` lines). Every failure of the server
or the socket is ``HttpError`` (``__cause__`` keeps the original); timeouts are the caller's
cancel scopes. Basic auth is sent when a password is given (``OPENCODE_SERVER_PASSWORD``).
With ``tls`` (an ``ssl.SSLContext``) it speaks HTTPS (the notifications' webhooks use it so);
``request``'s ``headers`` add to or replace the client's own (``content-type`` among them).

Bounded like a child's stdout (``limit``, 16 MiB by default): a response body or one event of
the stream that grows past it is an ``HttpError`` (the server broke its protocol), never a
memory blow-up; h11 bounds the heads.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING

import h11
import trio

from protocol.errors import ProtocolError
from protocol.framing import DEFAULT_LIMIT

if TYPE_CHECKING:
    import ssl

__all__ = ["HttpClient", "HttpError", "SseParser"]

_READ = 1 << 16


class HttpError(ProtocolError):
    """The server could not be reached, broke the connection or sent malformed HTTP."""


class SseParser:
    """Sans-IO: bytes of an event stream in, the data of each complete event out."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._limit = limit
        self._buffer = b""
        self._data: list[bytes] = []
        self._size = 0  # bytes of data in ``_data``
        self._overflow = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """Every event completed by ``chunk``, as its joined ``data`` (comments and ids dropped).

        Raises ``HttpError`` once the event being read holds more than ``limit`` bytes (after
        handing out, first, the events completed before it)."""
        if self._overflow:
            raise HttpError(f"an event of the stream exceeds {self._limit} bytes")
        self._buffer += chunk
        out: list[bytes] = []
        while not self._overflow:
            cut = self._buffer.find(b"\n")
            if cut < 0:
                self._overflow = len(self._buffer) + self._size > self._limit
                break
            line, self._buffer = self._buffer[:cut].rstrip(b"\r"), self._buffer[cut + 1:]
            if not line:
                if self._data:
                    out.append(b"\n".join(self._data))
                    self._data = []
                    self._size = 0
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
                self._size += len(self._data[-1]) + 1
                self._overflow = self._size > self._limit + 1  # the last joiner is not sent
        if self._overflow:
            self._buffer, self._data = b"", []
            if not out:
                raise HttpError(f"an event of the stream exceeds {self._limit} bytes")
        return out

    def end(self) -> None:
        """The stream ended: raises ``HttpError`` if its last event broke the limit."""
        if self._overflow:
            raise HttpError(f"an event of the stream exceeds {self._limit} bytes")


class HttpClient:
    """Requests to one ``host:port``; keeps idle connections for reuse."""

    def __init__(self, host: str, port: int, *, password: str | None = None,
                 user: str = "opencode", limit: int = DEFAULT_LIMIT,
                 tls: ssl.SSLContext | None = None) -> None:
        self.host = host
        self.port = port
        self.limit = limit
        self.tls = tls
        self._idle: list[_Connection] = []
        name = f"[{host}]" if ":" in host else host
        self._headers = [("host", name if tls is not None and port == 443 else f"{name}:{port}"),
                         ("accept", "application/json")]
        if password:
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            self._headers.append(("authorization", f"Basic {token}"))

    async def request(self, method: str, target: str, body: bytes | None = None, *,
                      headers: Sequence[tuple[str, str]] = ()) -> tuple[int, bytes]:
        """One exchange; ``(status, body)``. Cancellable (the connection is then dropped)."""
        conn = self._idle.pop() if self._idle else await self._connect()
        try:
            status, data = await conn.exchange(self._request(method, target, body, extra=headers), body)
        except BaseException:
            await conn.aclose()
            raise
        if conn.reusable():
            self._idle.append(conn)
        else:
            await conn.aclose()
        return status, data

    async def events(self, target: str) -> AsyncIterator[bytes]:
        """The data of each event of the stream at ``target``, until the server ends it."""
        conn = await self._connect()
        try:
            request = self._request("GET", target, None, accept="text/event-stream")
            status = await conn.open(request)
            if status != 200:
                raise HttpError(f"GET {target} answered {status}")
            parser = SseParser(self.limit)
            async with aclosing(conn.body()) as chunks:
                async for chunk in chunks:
                    for data in parser.feed(chunk):
                        yield data
            parser.end()
        finally:
            await conn.aclose()

    async def aclose(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.aclose()

    def _request(self, method: str, target: str, body: bytes | None,
                 accept: str | None = None, extra: Sequence[tuple[str, str]] = ()) -> h11.Request:
        headers = list(self._headers)
        if accept:
            headers = [(k, accept if k == "accept" else v) for k, v in headers]
        if body is not None:
            headers += [("content-type", "application/json"), ("content-length", str(len(body)))]
        elif method in ("POST", "PUT", "PATCH"):
            headers.append(("content-length", "0"))
        if extra:
            replaced = {k.lower() for k, _ in extra} - {"host", "content-length"}
            headers = [(k, v) for k, v in headers if k not in replaced]
            headers += [(k, v) for k, v in extra if k.lower() in replaced]
        return h11.Request(method=method, target=target, headers=headers)

    async def _connect(self) -> _Connection:
        try:
            if self.tls is not None:
                stream: trio.abc.Stream = await trio.open_ssl_over_tcp_stream(
                    self.host, self.port, ssl_context=self.tls)
            else:
                stream = await trio.open_tcp_stream(self.host, self.port)
        except OSError as exc:
            raise HttpError(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        return _Connection(stream, self.limit)


class _Connection:
    def __init__(self, stream: trio.abc.Stream, limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._h11 = h11.Connection(h11.CLIENT)

    def reusable(self) -> bool:
        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
            self._h11.start_next_cycle()
            return True
        return False

    async def exchange(self, request: h11.Request, body: bytes | None) -> tuple[int, bytes]:
        status = await self.open(request, body)
        data = bytearray()
        async with aclosing(self.body()) as chunks:
            async for chunk in chunks:
                data += chunk
                if len(data) > self._limit:
                    raise HttpError(f"{request.method.decode()} {request.target.decode()}: "
                                    f"the response body exceeds {self._limit} bytes")
        return status, bytes(data)

    async def open(self, request: h11.Request, body: bytes | None = None) -> int:
        """Send the request; return the response status once its head arrives."""
        try:
            out = self._h11.send(request)
            if body:
                out = (out or b"") + (self._h11.send(h11.Data(data=body)) or b"")
            out = (out or b"") + (self._h11.send(h11.EndOfMessage()) or b"")
            await self._stream.send_all(out)
            while True:
                event = await self._next()
                if isinstance(event, h11.Response):
                    return event.status_code
        except (h11.ProtocolError, trio.BrokenResourceError, OSError) as exc:
            raise HttpError(f"HTTP exchange failed: {_why(exc)}") from exc

    async def body(self) -> AsyncGenerator[bytes, None]:
        """The response body's chunks as they arrive."""
        try:
            while True:
                event = await self._next()
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                    return
        except (h11.ProtocolError, trio.BrokenResourceError, OSError) as exc:
            raise HttpError(f"HTTP response broke off: {_why(exc)}") from exc

    async def _next(self) -> object:
        while True:
            event = self._h11.next_event()
            if event is not h11.NEED_DATA:
                if isinstance(event, h11.ConnectionClosed) and self._h11.their_state is not h11.DONE:
                    raise h11.RemoteProtocolError("the server closed the connection")
                return event
            self._h11.receive_data(bytes(await self._stream.receive_some(_READ)))

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True):
            await self._stream.aclose()


def _why(exc: BaseException) -> str:
    """What went wrong: a broken TLS stream says nothing itself, its cause (a refused
    certificate, say) does."""
    return str(exc) or str(exc.__cause__ or "") or type(exc).__name__
