"""Opening a client: find the daemon, connect, upgrade to a websocket, shake hands, read.

``open_client`` reads ``daemon.json`` and ``token`` from the state directory, connects (the
Unix socket by default, else TCP) and does the ``hello``/``welcome`` handshake;
``open_client_on`` does the same over any stream. Both yield a ``Client`` whose reader task
runs in a nursery they own; leaving the block closes the connection (bounded) and cancels it.
Connecting and the handshake together are bounded by ``connect_timeout``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import trio
from trio_websocket import HandshakeError, wrap_client_stream

from protocol.errors import ProtocolError, Timeout

from supervisor.excgroup import lone_exception, raise_lone
from supervisor.client.client import SUBSCRIPTION_BUFFER, Client
from supervisor.client.discovery import connect_stream, discover

__all__ = [
    "CONNECT_TIMEOUT",
    "FRAME_LIMIT",
    "REQUEST_TIMEOUT",
    "open_client",
    "open_client_on",
]

FRAME_LIMIT = 16 * 1024 * 1024
REQUEST_TIMEOUT = 60.0
CONNECT_TIMEOUT = 10.0


@asynccontextmanager
async def open_client(state_dir: Path | str | None = None, *,
                      transport: Literal["unix", "tcp"] = "unix", name: str = "cli",
                      request_timeout: float = REQUEST_TIMEOUT,
                      connect_timeout: float = CONNECT_TIMEOUT,
                      frame_limit: int = FRAME_LIMIT,
                      subscription_buffer: int = SUBSCRIPTION_BUFFER) -> AsyncIterator[Client]:
    """Connect to the daemon of ``state_dir`` (``resolve_state_dir`` rules) and shake hands.

    ``name`` is what ``hello`` calls this client: the daemon lists it in ``daemon.status`` and
    names it as who decided a permission (``permission_decided.by_name``).

    Raises ``DaemonNotRunning`` when no daemon answers there, ``Unauthorized`` on a wrong
    token, ``Timeout`` when connecting and the handshake take over ``connect_timeout``.
    Leaving the block closes the connection (bounded) and cancels the reader; an exception
    of the block propagates as raised (a lone exception is not wrapped in a group).
    """
    state, info, token = await trio.to_thread.run_sync(discover, state_dir)  # file reads

    async def connect() -> tuple[trio.abc.Stream, str, str]:
        return await connect_stream(state.root, info, transport)

    async with _open(connect, token, name=name, request_timeout=request_timeout,
                     connect_timeout=connect_timeout, frame_limit=frame_limit,
                     subscription_buffer=subscription_buffer) as client:
        yield client


@asynccontextmanager
async def open_client_on(stream: trio.abc.Stream, token: str, *, name: str = "corral-client",
                         request_timeout: float = REQUEST_TIMEOUT,
                         connect_timeout: float = CONNECT_TIMEOUT,
                         frame_limit: int = FRAME_LIMIT,
                         subscription_buffer: int = SUBSCRIPTION_BUFFER) -> AsyncIterator[Client]:
    """Like ``open_client``, over a stream the caller connected (a forwarded socket, a test's memory stream)."""
    async def connect() -> tuple[trio.abc.Stream, str, str]:
        return stream, "localhost", "/v1"

    async with _open(connect, token, name=name, request_timeout=request_timeout,
                     connect_timeout=connect_timeout, frame_limit=frame_limit,
                     subscription_buffer=subscription_buffer) as client:
        yield client


@asynccontextmanager
async def _open(connect: Callable[[], Awaitable[tuple[trio.abc.Stream, str, str]]], token: str, *,
                name: str, request_timeout: float, connect_timeout: float, frame_limit: int,
                subscription_buffer: int) -> AsyncIterator[Client]:
    """Connect (``connect`` gives the stream, Host header and path), upgrade, shake hands, read."""
    try:
        async with trio.open_nursery() as nursery:
            client: Client | None = None
            stream: trio.abc.Stream | None = None
            try:
                with trio.move_on_after(connect_timeout) as connecting:
                    stream, host, path = await connect()
                    # trio-websocket annotates SocketStream but only uses the Stream interface.
                    ws = await wrap_client_stream(nursery, stream, host, path,  # type: ignore[arg-type]
                                                  message_queue_size=64, max_message_size=frame_limit)
                    client = Client(ws, stream, nursery, request_timeout=request_timeout,
                                    subscription_buffer=subscription_buffer)
                    await client._handshake(token, name)
                if connecting.cancelled_caught or client is None:
                    raise Timeout(f"no welcome from the daemon within {connect_timeout:g} s")
                nursery.start_soon(client._reader)
                yield client
            finally:
                if client is not None:
                    await client.aclose()
                elif stream is not None:
                    with trio.CancelScope(shield=True):
                        await stream.aclose()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        leaf = lone_exception(group)
        if isinstance(leaf, HandshakeError):
            raise ProtocolError(f"the daemon refused the websocket upgrade: {leaf!r}") from None
        raise_lone(group)
