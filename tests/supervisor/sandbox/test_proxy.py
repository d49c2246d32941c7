"""The allowlist proxy against real sockets: tunnels, forwarded HTTP, refusals, garbage, limits."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing

from protocol.errors import ActorGone
from supervisor.sandbox.allowlist import Allowlist
from supervisor.sandbox.proxy import ProxyHandle, ProxyLimits, ProxyServer
from supervisor.tree import SupervisorSpec, supervise


class Upstream:
    """A TCP server on 127.0.0.1 that records what it receives and echoes it back uppercased,
    or answers one fixed HTTP response when ``http`` is set."""

    def __init__(self, http: bool = False) -> None:
        self.http = http
        self.port = 0
        self.received = bytearray()
        self.connections = 0

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        await trio.serve_listeners(self._one, listeners, task_status=task_status)

    async def _one(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        async with stream:
            while data := await stream.receive_some(65536):
                self.received += data
                if self.http and b"\r\n\r\n" in self.received:
                    await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
                    return
                if not self.http:
                    await stream.send_all(data.upper())


@pytest.fixture
async def upstream(nursery: trio.Nursery) -> Upstream:
    server = Upstream()
    await nursery.start(server.serve)
    return server


@pytest.fixture
async def http_upstream(nursery: trio.Nursery) -> Upstream:
    server = Upstream(http=True)
    await nursery.start(server.serve)
    return server


class Proxy:
    def __init__(self, server: ProxyServer, handle: ProxyHandle, denied: list[tuple[str, int]]) -> None:
        self.server, self.handle, self.denied = server, handle, denied

    async def connect(self) -> trio.SocketStream:
        assert self.handle.socket_path is not None
        return await trio.open_unix_socket(str(self.handle.socket_path))


async def start_proxy(nursery: trio.Nursery, tmp_path: Path, allow: list[str], *, tcp: bool = False,
                      limits: ProxyLimits | None = None) -> Proxy:
    denied: list[tuple[str, int]] = []

    async def on_denied(host: str, port: int) -> None:
        denied.append((host, port))

    server = ProxyServer(Allowlist.parse(allow), on_denied, socket_path=tmp_path / "p.sock", tcp=tcp,
                         limits=limits)
    handle = await nursery.start(server.run)
    return Proxy(server, handle, denied)


async def read_response(stream: trio.SocketStream) -> bytes:
    """Everything until the proxy closes (every refusal says ``Connection: close``)."""
    out = bytearray()
    while data := await stream.receive_some(65536):
        out += data
    return bytes(out)


async def read_until(stream: trio.SocketStream, marker: bytes) -> bytes:
    out = bytearray()
    while marker not in out:
        data = await stream.receive_some(65536)
        assert data, f"closed before {marker!r}: {bytes(out)!r}"
        out += data
    return bytes(out)


async def test_connect_to_an_allowed_host_tunnels_both_ways(nursery: trio.Nursery, tmp_path: Path,
                                                             upstream: Upstream) -> None:
    proxy = await start_proxy(nursery, tmp_path, [f"127.0.0.1:{upstream.port}"])
    with trio.fail_after(10):
        async with await proxy.connect() as client:
            # the first tunnelled bytes ride with the CONNECT head: they must not be lost
            await client.send_all(f"CONNECT 127.0.0.1:{upstream.port} HTTP/1.1\r\n\r\nearly ".encode())
            got = await read_until(client, b"EARLY ")
            assert got == b"HTTP/1.1 200 Connection established\r\n\r\nEARLY "
            await client.send_all(b"ping")
            assert await read_until(client, b"PING") == b"PING"
            await client.send_eof()  # a half-close reaches the server, which then closes
            assert await client.receive_some(10) == b""
    assert bytes(upstream.received) == b"early ping"
    assert proxy.denied == [] and proxy.server.statistics().tunnels == 1


async def test_connect_outside_the_allowlist_is_403_and_reported(nursery: trio.Nursery, tmp_path: Path,
                                                                 upstream: Upstream) -> None:
    proxy = await start_proxy(nursery, tmp_path, [f"127.0.0.1:{upstream.port + 1}", "api.example.com"])
    with trio.fail_after(10):
        async with await proxy.connect() as client:
            await client.send_all(f"CONNECT 127.0.0.1:{upstream.port} HTTP/1.1\r\n\r\n".encode())
            answer = await read_response(client)
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert f"127.0.0.1:{upstream.port} is not on this sandbox's allowlist".encode() in answer
    assert proxy.denied == [("127.0.0.1", upstream.port)]
    assert upstream.connections == 0
    assert proxy.server.statistics().denied == 1


async def test_absolute_form_http_is_forwarded_in_origin_form(nursery: trio.Nursery, tmp_path: Path,
                                                              http_upstream: Upstream) -> None:
    proxy = await start_proxy(nursery, tmp_path, ["127.0.0.1"])
    with trio.fail_after(10):
        async with await proxy.connect() as client:
            await client.send_all(f"GET http://127.0.0.1:{http_upstream.port}/a?b=c HTTP/1.1\r\n"
                                  f"Host: 127.0.0.1:{http_upstream.port}\r\nProxy-Connection: keep-alive\r\n\r\n".encode())
            answer = await read_response(client)
    assert answer == b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
    assert bytes(http_upstream.received) == (f"GET /a?b=c HTTP/1.1\r\nHost: 127.0.0.1:{http_upstream.port}\r\n"
                                             "Connection: close\r\n\r\n").encode()
    assert proxy.server.statistics().forwarded == 1


async def test_absolute_form_http_outside_the_allowlist_is_403(nursery: trio.Nursery, tmp_path: Path,
                                                               http_upstream: Upstream) -> None:
    proxy = await start_proxy(nursery, tmp_path, ["localhost"])
    with trio.fail_after(10):
        async with await proxy.connect() as client:
            await client.send_all(f"GET http://127.0.0.1:{http_upstream.port}/ HTTP/1.1\r\n\r\n".encode())
            assert (await read_response(client)).startswith(b"HTTP/1.1 403 ")
    assert proxy.denied == [("127.0.0.1", http_upstream.port)] and http_upstream.connections == 0


@pytest.mark.parametrize(("sent", "status"), [
    (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 40 + b"\r\n\r\n", b"400"),
    (b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", b"400"),
    (b"CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n", b"400"),
    (b"CONNECT 127.0.0.1:1 HTTP/1.1\r\nX-Big: " + b"a" * 20000, b"431"),
])
async def test_garbage_and_oversized_heads_get_a_typed_answer(nursery: trio.Nursery, tmp_path: Path,
                                                              sent: bytes, status: bytes) -> None:
    proxy = await start_proxy(nursery, tmp_path, ["127.0.0.1"])
    with trio.fail_after(10):
        async with await proxy.connect() as client:
            await client.send_all(sent)
            answer = await read_response(client)
    assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer
    assert proxy.server.statistics().bad == 1 and proxy.denied == []
    # and the proxy still serves the next client
    with trio.fail_after(10):
        async with await proxy.connect() as client:
            await client.send_all(b"CONNECT example.invalid:443 HTTP/1.1\r\n\r\n")
            assert (await read_response(client)).startswith(b"HTTP/1.1 403 ")


async def test_a_silent_client_gets_408_after_the_head_timeout(nursery: trio.Nursery, tmp_path: Path,
                                                               autojump_clock: trio.testing.MockClock) -> None:
    proxy = await start_proxy(nursery, tmp_path, ["127.0.0.1"], limits=ProxyLimits(head_timeout=7.0))
    async with await proxy.connect() as client:
        start = trio.current_time()
        await client.send_all(b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n")  # the blank line never comes
        answer = await read_response(client)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert trio.current_time() - start == pytest.approx(7.0)


async def test_an_unreachable_allowed_host_is_502(nursery: trio.Nursery, tmp_path: Path) -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    closed_port = listeners[0].socket.getsockname()[1]
    await listeners[0].aclose()  # nothing listens there now
    proxy = await start_proxy(nursery, tmp_path, ["127.0.0.1"])
    with trio.fail_after(10):
        async with await proxy.connect() as client:
            await client.send_all(f"CONNECT 127.0.0.1:{closed_port} HTTP/1.1\r\n\r\n".encode())
            assert (await read_response(client)).startswith(b"HTTP/1.1 502 ")
    assert proxy.server.statistics().upstream_failed == 1


async def test_the_tcp_listener_serves_the_same_proxy(nursery: trio.Nursery, tmp_path: Path,
                                                      upstream: Upstream) -> None:
    proxy = await start_proxy(nursery, tmp_path, [f"127.0.0.1:{upstream.port}"], tcp=True)
    assert proxy.handle.tcp_port
    with trio.fail_after(10):
        async with await trio.open_tcp_stream("127.0.0.1", proxy.handle.tcp_port) as client:
            await client.send_all(f"CONNECT 127.0.0.1:{upstream.port} HTTP/1.1\r\n\r\nx".encode())
            assert (await read_until(client, b"X")).endswith(b"\r\n\r\nX")


async def test_a_failing_report_does_not_end_the_proxy(nursery: trio.Nursery, tmp_path: Path) -> None:
    async def gone(host: str, port: int) -> None:
        raise ActorGone("the session is gone")

    server = ProxyServer(Allowlist(), gone, socket_path=tmp_path / "p.sock")
    handle = await nursery.start(server.run)
    for _ in range(2):
        with trio.fail_after(10):
            async with await trio.open_unix_socket(str(handle.socket_path)) as client:
                await client.send_all(b"CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n")
                assert (await read_response(client)).startswith(b"HTTP/1.1 403 ")
    assert server.statistics().denied == 2


async def test_supervised_restart_binds_the_same_socket_and_port(tmp_path: Path, upstream: Upstream) -> None:
    """A permanent child: after a crash the supervisor starts it again on the same addresses."""
    async def ignore(host: str, port: int) -> None:
        pass

    server = ProxyServer(Allowlist.parse([f"127.0.0.1:{upstream.port}"]), ignore,
                         socket_path=tmp_path / "p.sock", tcp=True)
    crashed, restarted = trio.Event(), trio.Event()
    real_run = server.run

    async def crash_once(*, task_status: trio.TaskStatus[ProxyHandle] = trio.TASK_STATUS_IGNORED) -> None:
        if not crashed.is_set():
            crashed.set()
            async with trio.open_nursery() as inner:
                task_status.started(await inner.start(real_run))
                raise OSError("listener broke")  # after it was ready: a crash, restarted
        async with trio.open_nursery() as inner:
            task_status.started(await inner.start(real_run))
            restarted.set()

    server.run = crash_once  # type: ignore[method-assign]
    spec = server.child_spec()
    assert spec.restart == "permanent" and spec.grace == 1.0
    async with trio.open_nursery() as nursery:
        sup = await nursery.start(supervise, SupervisorSpec(intensity=3, period=60), [spec])
        port = server.tcp_port
        with trio.fail_after(20):
            await restarted.wait()  # after the tree's backoff
            async with await trio.open_unix_socket(str(tmp_path / "p.sock")) as client:
                await client.send_all(f"CONNECT 127.0.0.1:{upstream.port} HTTP/1.1\r\n\r\nz".encode())
                assert (await read_until(client, b"Z")).endswith(b"Z")
        assert server.tcp_port == port and port
        assert sup.statistics().restarts == 1
        nursery.cancel_scope.cancel()
    assert not (tmp_path / "p.sock").exists()


@pytest.fixture
async def nursery() -> AsyncIterator[trio.Nursery]:
    async with trio.open_nursery() as n:
        yield n
        n.cancel_scope.cancel()


async def test_a_socket_path_longer_than_sockaddr_un_allows_still_binds(tmp_path: Path) -> None:
    """Session directories can be deep: the proxy binds through its directory's descriptor."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    async def ignore(host: str, port: int) -> None:
        pass

    server = ProxyServer(Allowlist(), ignore, socket_path=deep / "proxy.sock")
    async with trio.open_nursery() as nursery:
        handle = await nursery.start(server.run)
        assert handle.socket_path is not None and len(bytes(handle.socket_path)) > 108
        assert (deep / "proxy.sock").is_socket() and (deep / "proxy.sock").stat().st_mode & 0o777 == 0o600
        directory = os.open(deep, os.O_PATH)
        try:
            with trio.fail_after(10):
                async with await trio.open_unix_socket(f"/proc/self/fd/{directory}/proxy.sock") as client:
                    await client.send_all(b"CONNECT a.example:1 HTTP/1.1\r\n\r\n")
                    assert (await read_response(client)).startswith(b"HTTP/1.1 403 ")
        finally:
            os.close(directory)
        nursery.cancel_scope.cancel()


async def test_connections_past_the_limit_wait_for_a_free_slot(nursery: trio.Nursery, tmp_path: Path,
                                                               upstream: Upstream) -> None:
    proxy = await start_proxy(nursery, tmp_path, [f"127.0.0.1:{upstream.port}"],
                              limits=ProxyLimits(max_connections=1))
    head = f"CONNECT 127.0.0.1:{upstream.port} HTTP/1.1\r\n\r\n".encode()
    with trio.fail_after(10):
        first = await proxy.connect()
        await first.send_all(head + b"a")
        await read_until(first, b"A")
        second = await proxy.connect()  # connected (the backlog) but not served
        await second.send_all(head + b"b")
        await trio.testing.wait_all_tasks_blocked()
        assert proxy.server.statistics().accepted == 1
        await first.aclose()  # its slot goes to the second
        assert (await read_until(second, b"B")).endswith(b"B")
        await second.aclose()
