"""The HTTP layer under every SDK: what leaves (headers) and how much may come back (bytes).

Each adapter hands its SDK an HTTP client built here, on a transport that enforces the closed
configuration on the wire, whatever the SDK picked up from the environment:

* Outgoing headers pass an allow-list (content negotiation, the SDK's ``x-stainless-*``
  telemetry, ``anthropic-version``, ``x-goog-api-client``). A credential header
  (``authorization``, ``x-api-key``, ``x-goog-api-key``) is kept only when the configured key is
  non-empty and the header carries that key: an empty key sends none, and an ambient
  ``OPENAI_ORG_ID``, ``OPENAI_CUSTOM_HEADERS``, ``ANTHROPIC_CUSTOM_HEADERS`` or admin key never
  reaches the server. ``accept-encoding`` is always ``identity``.
* Responses are limited to ``max_response_bytes`` counted after decompression (gzip and deflate
  are decoded here if a server compresses anyway); passing it raises ``ModelError``
  ``native.protocol.too_large`` from the body stream.
* No proxy or certificate variables are read (``trust_env=False``), redirects are not followed,
  and the connection pool is kept per event loop, so one model object works across loops.

The OpenAI and Anthropic SDKs take an ``httpx2`` client, google-genai an ``httpx`` one; the two
libraries share their API, so one transport and one stream serve both, each with a two-line
subclass per library.
"""

from __future__ import annotations

import asyncio
import weakref
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from types import ModuleType
from typing import Any, ClassVar, Protocol

import httpx
import httpx2

from .errors import ModelError

__all__ = ["ClosePool", "WirePolicy", "httpx2_client", "httpx_client", "outgoing_headers"]

ClosePool = Callable[[], Awaitable[None]]
"""Closes the connection pool of the running event loop (the client stays usable)."""

_CREDENTIALS = frozenset({"authorization", "x-api-key", "x-goog-api-key"})
_ALLOWED = frozenset({
    "host", "accept", "content-type", "content-length", "transfer-encoding", "user-agent",
    "connection",
    "idempotency-key", "anthropic-version", "x-goog-api-client",
})
_ALLOWED_PREFIXES = ("x-stainless-",)


class WirePolicy:
    """The key to allow on the wire ("" for none), the response limit and the timeout (s)."""

    __slots__ = ("key", "max_response_bytes", "timeout")

    def __init__(self, key: str, max_response_bytes: int, timeout: float) -> None:
        self.key, self.max_response_bytes, self.timeout = key, max_response_bytes, timeout

    def __repr__(self) -> str:
        return f"WirePolicy(key={'***' if self.key else ''!r}, limit={self.max_response_bytes})"


def outgoing_headers(items: Iterable[tuple[str, str]], key: str) -> list[tuple[str, str]]:
    """The headers a request may carry out of ``items`` (see the module docstring)."""
    kept: list[tuple[str, str]] = []
    for name, value in items:
        lower = name.lower()
        if lower in _CREDENTIALS:
            if key and key in value:
                kept.append((name, value))
        elif lower in _ALLOWED or lower.startswith(_ALLOWED_PREFIXES):
            kept.append((name, value))
    kept.append(("accept-encoding", "identity"))
    return kept


def httpx2_client(policy: WirePolicy) -> tuple[httpx2.AsyncClient, ClosePool]:
    """An ``httpx2`` client (OpenAI, Anthropic SDKs) on a policed transport."""
    transport = _Transport2(policy)
    return transport.client(), transport.aclose


def httpx_client(policy: WirePolicy) -> tuple[httpx.AsyncClient, ClosePool]:
    """An ``httpx`` client (google-genai) on a policed transport."""
    transport = _Transport1(policy)
    return transport.client(), transport.aclose


class _Meter:
    """Decodes (if compressed) and counts one response body against the limit."""

    def __init__(self, encoding: str, limit: int) -> None:
        encoding = encoding.strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise ModelError("native.protocol.malformed",
                             f"response in an encoding we did not ask for: {encoding}")
        self.decoding = encoding not in ("", "identity")
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 32) if self.decoding else None
        self._left = limit
        self._limit = limit

    def feed(self, chunk: bytes) -> bytes:
        if self._zlib is not None:
            try:
                chunk = self._zlib.decompress(chunk, self._left + 1)
            except zlib.error as exc:
                raise ModelError("native.protocol.malformed", f"bad compressed body: {exc}") from exc
        self._left -= len(chunk)
        if self._left < 0:
            raise ModelError("native.protocol.too_large",
                             f"response larger than max_response_bytes ({self._limit})")
        return chunk


class _Body(Protocol):
    """A response body as either library's connection pool hands it over."""

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class _MeteredBody:
    """A response body passed through a ``_Meter`` (the stream of both libraries)."""

    def __init__(self, inner: _Body, meter: _Meter) -> None:
        self._inner, self._meter = inner, meter

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            if data := self._meter.feed(chunk):
                yield data

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Stream2(_MeteredBody, httpx2.AsyncByteStream):
    pass


class _Stream1(_MeteredBody, httpx.AsyncByteStream):
    pass


class _PolicedTransport:
    """The transport of both libraries: headers policed, one pool per event loop, bodies metered.

    ``_lib`` is the library (``httpx`` or ``httpx2``, which share this API) and ``_stream`` its
    metered stream class; requests and responses are that library's, hence ``Any`` here (each
    subclass's base class gives them their type to callers).
    """

    _lib: ClassVar[ModuleType]
    _stream: ClassVar[type[_MeteredBody]]

    def __init__(self, policy: WirePolicy) -> None:
        self._policy = policy
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    def client(self) -> Any:
        """The library's ``AsyncClient`` on this transport: no environment, no redirects."""
        timeout = self._lib.Timeout(self._policy.timeout, connect=min(self._policy.timeout, 30.0))
        return self._lib.AsyncClient(transport=self, timeout=timeout, trust_env=False,
                                     follow_redirects=False)

    async def handle_async_request(self, request: Any) -> Any:
        lib = self._lib
        request.headers = lib.Headers(outgoing_headers(request.headers.multi_items(), self._policy.key))
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools[loop] = lib.AsyncHTTPTransport(trust_env=False, retries=0)
        response = await pool.handle_async_request(request)
        try:
            meter = _Meter(response.headers.get("content-encoding", ""),
                           self._policy.max_response_bytes)
        except ModelError:
            await response.aclose()
            raise
        if not isinstance(response.stream, lib.AsyncByteStream):
            raise TypeError("the connection pool returned a synchronous body stream")
        return lib.Response(
            response.status_code, request=request, extensions=response.extensions,
            headers=_body_headers(response.headers.multi_items(), meter.decoding),
            stream=self._stream(response.stream, meter))

    async def aclose(self) -> None:
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.aclose()


def _body_headers(items: list[tuple[str, str]], decoding: bool) -> list[tuple[str, str]]:
    if not decoding:
        return items
    return [(k, v) for k, v in items if k.lower() not in ("content-encoding", "content-length")]


class _Transport2(_PolicedTransport, httpx2.AsyncBaseTransport):
    _lib: ClassVar[ModuleType] = httpx2
    _stream: ClassVar[type[_MeteredBody]] = _Stream2


class _Transport1(_PolicedTransport, httpx.AsyncBaseTransport):
    _lib: ClassVar[ModuleType] = httpx
    _stream: ClassVar[type[_MeteredBody]] = _Stream1
