"""The websocket listeners: TCP loopback and a Unix socket, one protocol, one gate.

Before the upgrade every request passes the gate: the path must be ``/v1``, a present
``Origin`` must be allow-listed (cross-site websocket hijacking), and ``Host`` must name a
loopback address (DNS rebinding). A message over the frame limit is answered with an
``error`` frame ``frame_too_large`` and close code 1009 with that reason.

This module leans on two internals of trio-websocket 0.12.2 (pinned): the server's per-stream
``_handle_connection`` and the connection's ``_handle_message_event``. They are the only way
to give an oversized frame the protocol's own error and close reason.
"""

from __future__ import annotations

import functools
import os
import socket
import stat
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import NoReturn

import trio
import wsproto.events as wse
from trio_websocket import CloseReason, WebSocketConnection, WebSocketRequest, WebSocketServer
from wsproto import ConnectionType, WSConnection

from protocol.codec import encode
from protocol.errors import ErrorCode
from protocol.messages import ErrorFrame

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
PATH = "/v1"

Handler = Callable[[WebSocketConnection, str], Awaitable[None]]


class Gate:
    """The pre-upgrade checks of PROTOCOL.md: path, Origin allow-list and loopback Host."""

    def __init__(self, port: int, extra_origins: Sequence[str] = ()) -> None:
        self.port = port
        self.origins = {f"http://127.0.0.1:{port}", f"http://localhost:{port}",
                        f"http://[::1]:{port}", *extra_origins}

    def refusal(self, path: str, host: str, headers: Sequence[tuple[bytes, bytes]], *,
                unix: bool) -> str | None:
        """Why this upgrade request is refused, or ``None`` to accept it."""
        if path.split("?", 1)[0] != PATH:
            return f"unknown path {path!r}; use {PATH}"
        fields = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers}
        origin = fields.get("origin")
        if origin is not None and origin not in self.origins:
            return f"origin {origin!r} is not allowed"
        if not unix and _host_name(host) not in LOOPBACK_HOSTS:
            return f"host {host!r} is not a loopback name"
        return None


async def serve(handler: Handler, *, host: str, port: int, socket_path: Path, frame_limit: int,
                extra_origins: Sequence[str] = (), connections: trio.Nursery | None = None,
                task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """Listen on ``host:port`` and ``socket_path`` (mode 0600); report the bound TCP port.

    Cancelling it stops accepting; connections live in ``connections`` (if given), so they can
    outlive the listeners during a graceful shutdown.
    """
    tcp = await trio.open_tcp_listeners(port, host=host)
    bound = tcp[0].socket.getsockname()[1]
    unix = await _unix_listener(socket_path)
    gate = Gate(bound, extra_origins)
    try:
        async with trio.open_nursery() as nursery:
            for listeners, is_unix in ((tcp, False), ([unix], True)):
                server = _Server(_gated(handler, gate, is_unix), listeners,
                                 handler_nursery=connections, message_queue_size=16,
                                 max_message_size=frame_limit, connect_timeout=10,
                                 disconnect_timeout=5)
                await nursery.start(server.run)
            task_status.started(bound)
    finally:
        socket_path.unlink(missing_ok=True)


def _gated(handler: Handler, gate: Gate, is_unix: bool) -> Callable[[WebSocketRequest], Awaitable[None]]:
    transport = "unix" if is_unix else "tcp"

    async def handle(request: WebSocketRequest) -> None:
        # wsproto keeps Host out of the extra headers; it is on the handshake event.
        host = str(getattr(getattr(request, "_event", None), "host", "") or "")
        reason = gate.refusal(request.path, host, request.headers, unix=is_unix)
        if reason is not None:
            await request.reject(403, body=reason.encode())
            return
        ws = await request.accept()
        await handler(ws, transport)

    return handle


async def _unix_listener(path: Path) -> trio.SocketListener:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and stat.S_ISSOCK(path.stat().st_mode):
        path.unlink()
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        await sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    return trio.SocketListener(sock)


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if ":" in host else host


class _Connection(WebSocketConnection):
    """A connection whose oversized frame gets the protocol's error and close reason."""

    async def _handle_message_event(self, event: wse.BytesMessage | wse.TextMessage) -> None:
        if self._message_size + len(event.data) > self._max_message_size:
            limit = self._max_message_size
            self._message_size = 0
            self._message_parts = []
            frame = ErrorFrame(id=None, code=ErrorCode.FRAME_TOO_LARGE.value,
                               message=f"frame exceeds the {limit}-byte limit")
            await self._send(wse.TextMessage(data=encode(frame).decode()))
            reason = ErrorCode.FRAME_TOO_LARGE.value
            self._close_reason = CloseReason(1009, reason)
            await self._send(wse.CloseConnection(code=1009, reason=reason))
            await self._recv_channel.aclose()
            self._reader_running = False
            return
        await super()._handle_message_event(event)


class _Server(WebSocketServer):
    async def run(self, *, task_status: trio.TaskStatus[WebSocketServer] = trio.TASK_STATUS_IGNORED) -> NoReturn:
        # The library's run() describes its listeners as IP endpoints, which a Unix socket is not.
        async with trio.open_nursery() as nursery:
            await nursery.start(functools.partial(
                trio.serve_listeners, self._handle_connection, list(self._listeners),
                handler_nursery=self._handler_nursery))
            task_status.started(self)
            await trio.sleep_forever()

    async def _handle_connection(self, stream: trio.abc.Stream) -> None:
        async with trio.open_nursery() as nursery:
            connection = _Connection(stream, WSConnection(ConnectionType.SERVER),
                                     message_queue_size=self._message_queue_size,
                                     max_message_size=self._max_message_size,
                                     receive_buffer_size=self._receive_buffer_size)
            nursery.start_soon(connection._reader_task)
            with trio.move_on_after(self._connect_timeout) as connect_scope:
                request = await connection._get_request()
            if connect_scope.cancelled_caught:
                nursery.cancel_scope.cancel()
                await stream.aclose()
                return
            try:
                await self._handler(request)
            finally:
                with trio.move_on_after(self._disconnect_timeout):
                    await connection.aclose()

