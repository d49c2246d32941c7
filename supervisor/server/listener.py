"""The listener: accepts streams on TCP loopback and the Unix socket, one connection child each.

Each stream's request head is read first (``web.read_head``): a request on TCP for a path in
``routes`` (the application's, such as ``/mcp``) is handed to its handler with the bytes read;
other plain HTTP is the browser UI's (``web.Site``); an upgrade goes on to the websocket with
the bytes read handed over.

The daemon binds the sockets once at boot (``bind``) and keeps them for its whole life, so a
restarted listener serves the very same port and ``daemon.json`` never goes stale. The listener
owns no connection: for each accepted stream it asks the connection supervisor to start a
temporary child, which does the websocket upgrade (after the ``Gate``) and then runs the
``Connection`` actor. A connection that crashes is logged and closed by its supervisor alone.

The websocket itself (``websocket.py``) is ours, on wsproto: it answers an oversized message with
an ``error`` frame ``frame_too_large`` and close code 1009, and a frame it cannot parse with
that frame's close code.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import socket
import stat
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

import trio

from protocol.errors import AddressInUse
from protocol.models import DaemonInfo
from supervisor.server.connection import FLUSH_TIMEOUT, Backend, Connection
from supervisor.server.gate import Gate
from supervisor.server.logins import Logins
from supervisor.server.roster import Roster
from supervisor.server.web import Site, read_head
from supervisor.server.websocket import WebSocket
from supervisor.tree import ChildSpec, RestartType, Supervisor

__all__ = ["HttpRoute", "Sockets", "bind", "run_listener"]

log = logging.getLogger("corral.listener")
_ids = itertools.count(1)
_CLOSE_TIMEOUT = 1.0
# A connection's shutdown grace: its flush and close bounds, and a margin.
_DISCONNECT_TIMEOUT = FLUSH_TIMEOUT + 2 * _CLOSE_TIMEOUT + 1.0
_RETRY = 0.1
_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})

HttpRoute = Callable[[trio.abc.Stream, bytes], Awaitable[None]]
"""Serves one TCP stream whose request is for its path, given the bytes read from it already
(the request head and whatever came with it). It makes its own checks (no Gate, no handshake
timeout applies) and the stream closes after it."""


class Sockets:
    """The daemon's listening sockets, bound once at boot: TCP (``port``) and the Unix socket."""

    def __init__(self, tcp: list[trio.SocketListener], unix: trio.SocketListener, socket_path: Path) -> None:
        self.tcp = tcp
        self.unix = unix
        self.socket_path = socket_path
        self.port: int = tcp[0].socket.getsockname()[1]

    def close(self) -> None:
        """Close every socket and remove the Unix socket's file."""
        for listener in (*self.tcp, self.unix):
            listener.socket.close()
        self.socket_path.unlink(missing_ok=True)


async def bind(*, host: str, port: int, socket_path: Path) -> Sockets:
    """Bind ``host:port`` (0: a free port) and ``socket_path`` (mode 0600).

    A taken address is ``AddressInUse``, whose one line says which and how to pick another.
    """
    try:
        tcp = await trio.open_tcp_listeners(port, host=host)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        raise AddressInUse(f"{host}:{port} is already in use; pick another port: --port N "
                           "(--port 0 for any free one) or `port` in the configuration's "
                           "[daemon] section") from exc
    return Sockets(tcp, await _unix_listener(socket_path), socket_path)


async def run_listener(sockets: Sockets, connections: Supervisor, backend: Backend, *, token: str,
                       info: DaemonInfo, frame_limit: int, queue_size: int, handshake_timeout: float,
                       extra_origins: Sequence[str] = (), roster: Roster | None = None,
                       routes: Mapping[str, HttpRoute] | None = None,
                       delivery: Callable[[float], None] | None = None,
                       task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """Accept until cancelled; each stream becomes a temporary child of ``connections``
    (entered in ``roster`` once its handshake is accepted). ``routes``: paths served on TCP by
    the application's own handlers; ``delivery``: each connection's ``Connection.delivery``."""
    gate = Gate(sockets.port, extra_origins)
    site = Site(gate, Logins(token))
    serving = _Serving(gate, site, backend, token, info, frame_limit, queue_size, handshake_timeout,
                       roster, routes if routes is not None else {}, delivery)

    async def accept(stream: trio.abc.Stream, unix: bool) -> None:
        spec = ChildSpec(id=f"conn-{next(_ids)}", start=partial(serving.run, stream, unix),
                         restart=RestartType.TEMPORARY, shutdown=_DISCONNECT_TIMEOUT)
        try:
            await connections.start_child(spec)
        except Exception:
            log.exception("could not start a connection")
            await trio.aclose_forcefully(stream)

    async with trio.open_nursery() as nursery:
        for listener in sockets.tcp:
            nursery.start_soon(_accept_loop, listener, False, accept)
        nursery.start_soon(_accept_loop, sockets.unix, True, accept)
        task_status.started(sockets.port)


async def _accept_loop(listener: trio.SocketListener, unix: bool,
                       accept: Callable[[trio.abc.Stream, bool], Awaitable[None]]) -> None:
    """Accept forever; the listener stays open when this is cancelled (a restart reuses it)."""
    while True:
        try:
            stream = await listener.accept()
        except OSError as exc:
            if exc.errno not in _CAPACITY_ERRNOS:
                raise
            log.error("accept failed (%s); retrying in %g s", os.strerror(exc.errno or 0), _RETRY)
            await trio.sleep(_RETRY)
            continue
        await accept(stream, unix)


class _Serving:
    """Runs one accepted stream: the websocket upgrade behind the gate, then a ``Connection``."""

    def __init__(self, gate: Gate, site: Site, backend: Backend, token: str, info: DaemonInfo,
                 frame_limit: int, queue_size: int, handshake_timeout: float,
                 roster: Roster | None, routes: Mapping[str, HttpRoute],
                 delivery: Callable[[float], None] | None = None) -> None:
        self.gate = gate
        self.site = site
        self.backend = backend
        self.token = token
        self.info = info
        self.frame_limit = frame_limit
        self.queue_size = queue_size
        self.handshake_timeout = handshake_timeout
        self.roster = roster
        self.routes = routes
        self.delivery = delivery

    async def run(self, stream: trio.abc.Stream, unix: bool, *,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        head = None
        route: HttpRoute | None = None
        try:
            with trio.move_on_after(self.handshake_timeout) as scope:
                head = await read_head(stream)
                if head is not None and not unix:
                    route = self.routes.get(urlsplit(head.request.target.decode("latin-1")).path)
                if head is not None and not head.upgrade and route is None:
                    await self.site.serve(stream, head, unix=unix)
            if head is not None and route is not None and not scope.cancelled_caught:
                await route(stream, head.raw)
            elif head is not None and head.upgrade and not scope.cancelled_caught:
                await self._websocket(WebSocket(stream, head.raw, max_message=self.frame_limit), unix,
                                      scope.deadline)
        finally:
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(stream)

    async def _websocket(self, ws: WebSocket, unix: bool, deadline: float) -> None:
        aborted = False
        try:
            by_cookie: bool | None = None
            with trio.move_on_at(deadline):
                by_cookie = await self._upgrade(ws, unix)
            if by_cookie is not None:
                connection = Connection(ws, self.backend, token=self.token, info=self.info,
                                        queue_size=self.queue_size, handshake_timeout=self.handshake_timeout,
                                        by_cookie=by_cookie, login_code=self.site.login_code,
                                        roster=self.roster, delivery=self.delivery)
                try:
                    await connection.run()
                finally:
                    aborted = connection.aborted
        finally:
            if not aborted:
                with trio.CancelScope(shield=True), trio.move_on_after(_CLOSE_TIMEOUT):
                    await ws.aclose()

    async def _upgrade(self, ws: WebSocket, unix: bool) -> bool | None:
        """Whether the UI's cookie authenticates the upgraded connection (from our own page
        only), or ``None`` when the request was refused (or malformed, or the client left)."""
        request = await ws.request()
        if request is None:
            return None
        reason = self.gate.refusal(request.target, request.host, request.extra_headers, unix=unix)
        if reason is not None:
            await ws.reject(403, reason.encode())
            return None
        by_cookie = not unix and self.site.authorised(request.extra_headers)
        await ws.accept()
        return by_cookie


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
