"""The daemon-side allowlist proxy of one sandboxed session (``net = "model"``).

What it owns: a Unix socket and, where asked, a loopback TCP port (Landlock mode has no network
namespace: the sandboxed process talks to the proxy directly, and Landlock lets it connect to
that one port). What it serves without owning: ``inside``, the listener on ``127.0.0.1:PORT`` in
a bubblewrap session's own network namespace (``sandboxnet``), which outlives its restarts. It takes ``CONNECT host:port`` (tunnels) and absolute-form ``http://`` requests
(forwarded, rewritten to origin-form with ``Connection: close``; ``httphead``), and answers
``403`` to a host outside the allowlist and reports that refusal through ``on_denied(host, port)``.

Bounded: at most ``max_connections`` at once (the next waits in the listen backlog); a head is
at most ``header_limit`` bytes (else ``431``) and must arrive within
``head_timeout`` (else ``408``); garbage gets ``400``; an upstream that cannot be reached within
``connect_timeout`` gets ``502``/``504``; a tunnel with no byte either way for ``idle_timeout``
is closed. Each connection is one task in the server's nursery; a peer that goes away ends its
connection only, while an error nobody mapped crashes the proxy, which its supervisor then
restarts. The proxy is a supervised child
(``ProxyServer.child_spec``: ``permanent``, short shutdown): a restart binds the same socket path
and the same TCP port again, because the sandbox's environment names them, and serves ``inside``
again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket as _stdsocket
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
import trio

from protocol.errors import CorralError, FrameTooLarge, ProtocolError
from supervisor.sandbox.allowlist import Allowlist
from supervisor.sandbox.httphead import ProxyRequest, find_head, parse_head
from supervisor.tree import ChildSpec, RestartType

__all__ = ["OnDenied", "ProxyHandle", "ProxyLimits", "ProxyServer", "ProxyStats"]

OnDenied = Callable[[str, int], Awaitable[None]]
"""``on_denied(host, port)``: told after a refused request has had its 403."""


class ProxyLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The proxy's bounds (seconds and bytes)."""

    header_limit: int = 16 * 1024
    head_timeout: float = 10.0
    connect_timeout: float = 10.0
    idle_timeout: float = 900.0
    chunk: int = 64 * 1024
    max_connections: int = 256
    """Connections served at once; past it the next waits in the listen backlog."""


class ProxyHandle(msgspec.Struct, frozen=True, kw_only=True):
    """What ``run`` starts with: where the proxy listens."""

    socket_path: Path | None
    tcp_port: int | None


class ProxyStats(msgspec.Struct, frozen=True, kw_only=True):
    """Counters since the server object was made (across restarts)."""

    accepted: int
    tunnels: int
    forwarded: int
    denied: int
    bad: int
    upstream_failed: int
    active: int


_SUN_PATH_MAX = 108
"""Bytes of a Unix socket's path (``sockaddr_un.sun_path``, its NUL included) on Linux."""

_REASONS = {400: "Bad Request", 403: "Forbidden", 408: "Request Timeout",
            431: "Request Header Fields Too Large", 502: "Bad Gateway", 504: "Gateway Timeout"}


class ProxyServer:
    """One session's proxy: the allowlist, where it listens, and its counters."""

    def __init__(self, allowlist: Allowlist, on_denied: OnDenied, *, socket_path: Path | None = None,
                 tcp: bool = False, limits: ProxyLimits | None = None, name: str = "proxy") -> None:
        if socket_path is None and not tcp:
            raise ValueError("a proxy needs a Unix socket path or a TCP port")
        self.allowlist = allowlist
        self.socket_path = socket_path
        self.limits = limits or ProxyLimits()
        self.name = name
        self.tcp_port: int | None = 0 if tcp else None
        """``0`` until the first bind picks a port; a restart binds that port again."""
        self.inside: _stdsocket.socket | None = None
        """A listening socket made elsewhere that it serves too, and never closes: a sandbox's
        ``127.0.0.1:PORT`` in its own network namespace (``supervisor.sandbox.sandboxnet``)."""
        self._on_denied = on_denied
        self._slots = trio.Semaphore(self.limits.max_connections)
        self._counts = dict.fromkeys(("accepted", "tunnels", "forwarded", "denied", "bad",
                                      "upstream_failed", "active"), 0)

    def child_spec(self, *, id: str | None = None) -> ChildSpec:
        """A ``permanent`` child with a 1 s shutdown (tunnels are cut, not drained)."""
        return ChildSpec(id=id or self.name, start=self.run, restart=RestartType.PERMANENT, shutdown=1.0)

    async def run(self, *, task_status: trio.TaskStatus[ProxyHandle] = trio.TASK_STATUS_IGNORED) -> None:
        """Bind, tell ``started`` where, and serve until cancelled; the socket file is removed
        on the way out. ``OSError`` if a bind fails (the supervisor's restart rules apply)."""
        listeners: list[trio.SocketListener] = []
        try:
            if self.socket_path is not None:
                listeners.append(await _unix_listener(self.socket_path))
            if self.tcp_port is not None:
                tcp = await _tcp_listener(self.tcp_port)
                self.tcp_port = tcp.socket.getsockname()[1]
                listeners.append(tcp)
            if self.inside is not None:  # a copy: closing it on the way out leaves the original
                listeners.append(trio.SocketListener(trio.socket.from_stdlib_socket(self.inside.dup())))
            async with trio.open_nursery() as nursery:
                for listener in listeners:
                    nursery.start_soon(self._accept, listener, nursery)
                task_status.started(ProxyHandle(socket_path=self.socket_path, tcp_port=self.tcp_port))
        finally:
            for listener in listeners:
                with trio.CancelScope(shield=True):
                    await listener.aclose()
            if self.socket_path is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.socket_path)

    def statistics(self) -> ProxyStats:
        return ProxyStats(**self._counts)

    async def _accept(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        while True:
            await self._slots.acquire()
            try:
                stream = await listener.accept()
            except OSError as exc:  # EMFILE and friends: wait a little, as trio.serve_listeners does
                self._slots.release()
                if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS):
                    raise
                await trio.sleep(0.1)
                continue
            except BaseException:
                self._slots.release()
                raise
            self._counts["accepted"] += 1
            nursery.start_soon(self._serve, stream)

    async def _serve(self, client: trio.SocketStream) -> None:
        self._counts["active"] += 1
        try:
            async with client:
                await self._handle(client)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass  # the client went away: nothing to answer
        finally:
            self._counts["active"] -= 1
            self._slots.release()

    async def _handle(self, client: trio.SocketStream) -> None:
        limits = self.limits
        try:
            with trio.fail_after(limits.head_timeout):
                request, rest = await _read_head(client, limits.header_limit, limits.chunk)
        except trio.TooSlowError:
            return await self._refuse(client, 408, "no request head in time")
        except FrameTooLarge as exc:
            return await self._refuse(client, 431, exc.message)
        except ProtocolError as exc:
            return await self._refuse(client, 400, exc.message)
        if request is None:
            return  # closed before a whole head: no request to answer
        if not self.allowlist.allows(request.host, request.port):
            self._counts["denied"] += 1
            await _answer(client, 403, f"{request.host}:{request.port} is not on this sandbox's allowlist")
            with contextlib.suppress(CorralError):  # the session is gone: nobody left to tell
                await self._on_denied(request.host, request.port)
            return
        upstream = await self._connect(client, request)
        if upstream is None:
            return
        async with upstream:
            if request.tunnel:
                self._counts["tunnels"] += 1
                await client.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                self._counts["forwarded"] += 1
                await upstream.send_all(request.upstream_head)
            if rest:
                await upstream.send_all(rest)
            await _splice(client, upstream, limits)

    async def _connect(self, client: trio.SocketStream, request: ProxyRequest) -> trio.SocketStream | None:
        where = f"{request.host}:{request.port}"
        try:
            with trio.fail_after(self.limits.connect_timeout):
                return await trio.open_tcp_stream(request.host, request.port)
        except trio.TooSlowError:
            self._counts["upstream_failed"] += 1
            await _answer(client, 504, f"{where} did not answer in time")
        except OSError as exc:
            self._counts["upstream_failed"] += 1
            await _answer(client, 502, f"{where} unreachable: {exc.strerror or exc}")
        return None

    async def _refuse(self, client: trio.SocketStream, status: int, why: str) -> None:
        self._counts["bad"] += 1
        await _answer(client, status, why)


async def _read_head(stream: trio.SocketStream, limit: int, chunk: int) -> tuple[ProxyRequest | None, bytes]:
    """The first request head and the bytes received after it; ``None`` if the peer closed first."""
    buffer = bytearray()
    while True:
        size = find_head(buffer, limit)
        if size is not None:
            return parse_head(bytes(buffer[:size])), bytes(buffer[size:])
        data = await stream.receive_some(chunk)
        if not data:
            return None, b""
        buffer += data


async def _answer(stream: trio.SocketStream, status: int, why: str) -> None:
    body = (why + "\n").encode("utf-8", "replace")
    head = (f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("ascii")
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await stream.send_all(head + body)


async def _splice(a: trio.SocketStream, b: trio.SocketStream, limits: ProxyLimits) -> None:
    """Relay both ways until both directions ended (EOF passed on) or ``idle_timeout`` of silence."""
    idle = trio.CancelScope(deadline=trio.current_time() + limits.idle_timeout)

    async def pump(src: trio.SocketStream, dst: trio.SocketStream) -> None:
        try:
            while data := await src.receive_some(limits.chunk):
                idle.deadline = trio.current_time() + limits.idle_timeout
                await dst.send_all(data)
            with contextlib.suppress(OSError):
                await dst.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            idle.cancel()  # one side broke: the other direction has nothing left to say

    with idle:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, a, b)
            nursery.start_soon(pump, b, a)


async def _unix_listener(path: Path) -> trio.SocketListener:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a socket file left by an earlier run (or a crashed one)
    sock = trio.socket.socket(_stdsocket.AF_UNIX, _stdsocket.SOCK_STREAM)
    try:
        if len(os.fsencode(path)) < _SUN_PATH_MAX:
            await sock.bind(os.fspath(path))
        else:  # too long for sockaddr_un: bind through a short name of its directory
            directory = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                await sock.bind(f"/proc/self/fd/{directory}/{path.name}")
            finally:
                os.close(directory)
        os.chmod(path, 0o600)
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return trio.SocketListener(sock)


async def _tcp_listener(port: int) -> trio.SocketListener:
    sock = trio.socket.socket(_stdsocket.AF_INET, _stdsocket.SOCK_STREAM)
    try:
        sock.setsockopt(_stdsocket.SOL_SOCKET, _stdsocket.SO_REUSEADDR, 1)
        await sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return trio.SocketListener(sock)


