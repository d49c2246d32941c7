"""The daemon's own tree in this process, with a scripted application: the listener and the
connections survive each other's crashes, and ``daemon.status`` reports the tree's restarts.

Real sockets and real time (generous bounds); faults are injected, never waited for by sleeping.
"""

from __future__ import annotations

import errno
import json
import logging
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from trio_websocket import ConnectionClosed, WebSocketConnection, open_websocket_url

from protocol.errors import UnknownMethod, UnknownSession
from protocol.messages import ClientRequest, DaemonStatus, DaemonStatusResult
from supervisor.server.config import DaemonConfig
from supervisor.server import Host, run_daemon
from supervisor.server.connection import FeedLike
from supervisor.statedir import DaemonFile, StateDir
from supervisor.tree import ChildSpec

LIMIT = 30


class BrokenFeed:
    """A session feed whose storage fails when read: a bug or a broken disk, met by the writer."""

    last_seq = 3

    def read_from(self, from_seq: int) -> Iterator[bytes]:
        raise RuntimeError("the disk is on fire")

    def listen(self, wake: Callable[[], None]) -> None:
        pass

    def unlisten(self, wake: Callable[[], None]) -> None:
        pass


class App:
    """A scripted application: no children, ``daemon.status``, and one broken session ``s-bad``."""

    def __init__(self) -> None:
        self.host: Host | None = None

    def boot(self, host: Host) -> None:
        self.host = host

    def children(self) -> Sequence[ChildSpec]:
        return []

    async def handle(self, request: ClientRequest, connection_id: str) -> msgspec.Struct:
        if isinstance(request, DaemonStatus) and self.host is not None:
            return DaemonStatusResult(version="test", pid=1, uptime_s=self.host.uptime, sessions=0,
                                      clients=self.host.clients, children=[],
                                      supervisors=self.host.supervisors())
        raise UnknownMethod("not here")

    def feed(self, session_id: str) -> FeedLike:
        if session_id == "s-bad":
            return BrokenFeed()
        raise UnknownSession(session_id)


class Daemon:
    def __init__(self, state: StateDir, host: Host, info: DaemonFile) -> None:
        self.state, self.host, self.info = state, host, info

    def url_on_disk(self) -> str:
        return str(json.loads((self.state.root / "daemon.json").read_text())["url"])


class AcceptFault:
    """Makes the next ``SocketListener.accept`` raise, once: the listener's accept loop crashes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed = False
        original = trio.SocketListener.accept

        async def accept(listener: trio.SocketListener) -> trio.SocketStream:
            if self.armed:
                self.armed = False
                raise OSError(errno.EBADF, "injected fault")
            return await original(listener)

        monkeypatch.setattr(trio.SocketListener, "accept", accept)


@pytest.fixture
def state_root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="cd-", dir="/tmp"))  # a Unix socket path must be short
    yield path / "state"
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def daemon(state_root: Path, nursery: trio.Nursery) -> AsyncIterator[Daemon]:
    state = StateDir(state_root)
    config = DaemonConfig(port=0)
    host = Host(state, config)
    stopped = trio.Event()

    async def run(*, task_status: trio.TaskStatus[DaemonFile]) -> None:
        try:
            await run_daemon(state, config, App(), host, port=0, task_status=task_status)
        finally:
            stopped.set()

    with trio.fail_after(LIMIT):
        info: DaemonFile = await nursery.start(run)
    yield Daemon(state, host, info)
    host.stop()
    with trio.fail_after(LIMIT):
        await stopped.wait()


async def _greet(ws: WebSocketConnection, state: StateDir) -> dict[str, Any]:
    await ws.send_message(json.dumps({"type": "hello", "protocol": 1, "token": state.token()}))
    return dict(json.loads(await ws.get_message()))


async def _status(ws: WebSocketConnection, request_id: int) -> dict[str, Any]:
    await ws.send_message(json.dumps({"type": "daemon.status", "id": request_id}))
    reply = dict(json.loads(await ws.get_message()))
    assert (reply["type"], reply["id"]) == ("ok", request_id), reply
    return dict(reply["result"])


def _root_child(daemon: Daemon, name: str) -> Any:
    root = daemon.host.statistics()[0]
    return next(c for c in root.children if c.id == name)


async def test_a_crashed_listener_comes_back_on_the_same_port_and_spares_the_connections(
        daemon: Daemon, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    fault = AcceptFault(monkeypatch)
    url = daemon.info.url
    with trio.fail_after(LIMIT):
        async with open_websocket_url(url) as before:
            fault.armed = True  # the accept after this connection's raises
            assert (await _greet(before, daemon.state))["type"] == "welcome"
            async with open_websocket_url(daemon.url_on_disk()) as after:
                assert (await _greet(after, daemon.state))["type"] == "welcome"
                status = await _status(after, 1)
            assert not fault.armed
            assert (await _status(before, 2))["clients"] >= 1  # accepted before the crash: untouched
    assert daemon.url_on_disk() == url
    assert _root_child(daemon, "listener").restarts == 1
    assert any("'listener' crashed" in r.getMessage() for r in caplog.records)
    root = next(s for s in status["supervisors"] if s["name"] == "daemon")
    assert root["restarts"] == 1 and root["strategy"] == "one_for_one"


async def test_a_listener_stopped_and_restarted_through_the_root_keeps_its_port(daemon: Daemon) -> None:
    assert daemon.host.root is not None
    with trio.fail_after(LIMIT):
        await daemon.host.root.terminate_child("listener")
        await daemon.host.root.restart_child("listener")
        async with open_websocket_url(daemon.url_on_disk()) as ws:
            assert (await _greet(ws, daemon.state))["type"] == "welcome"
            assert (await _status(ws, 1))["clients"] == 1
    assert daemon.url_on_disk() == daemon.info.url


async def test_a_crashing_connection_closes_alone_and_is_logged(
        daemon: Daemon, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    with trio.fail_after(LIMIT):
        async with open_websocket_url(daemon.info.url) as bystander:
            await _greet(bystander, daemon.state)
            async with open_websocket_url(daemon.info.url) as victim:
                await _greet(victim, daemon.state)
                await victim.send_message(json.dumps({"type": "session.subscribe", "id": 1,
                                                      "session_id": "s-bad"}))
                frames = []
                with pytest.raises(ConnectionClosed) as closed:
                    while True:
                        frames.append(json.loads(await victim.get_message()))
                assert frames == [{"type": "ok", "id": 1, "result": {"last_seq": 3}}]
                assert (closed.value.reason.code, closed.value.reason.reason) == (1011, "internal")
            await trio.testing.wait_all_tasks_blocked()  # the supervisor has heard of the exit
            status = await _status(bystander, 2)
    assert status["clients"] == 1
    connections = next(s for s in status["supervisors"] if s["name"] == "connections")
    assert (connections["restarts"], connections["children"], connections["running"]) == (0, 1, 1)
    crashed = [r for r in caplog.records if "crashed" in r.getMessage() and "conn-" in r.getMessage()]
    assert len(crashed) == 1 and "the disk is on fire" in caplog.text


async def test_daemon_status_reports_every_supervisor(daemon: Daemon) -> None:
    with trio.fail_after(LIMIT):
        async with open_websocket_url(daemon.info.url) as ws:
            await _greet(ws, daemon.state)
            status = await _status(ws, 1)
    by_name = {s["name"]: s for s in status["supervisors"]}
    assert list(by_name) == ["daemon", "connections"]
    assert by_name["daemon"] == {"name": "daemon", "strategy": "one_for_one", "intensity": 3,
                                 "period": 10.0, "restarts": 0, "restarts_in_period": 0,
                                 "children": 3, "running": 3}
    assert by_name["connections"]["strategy"] == "simple_one_for_one"
    assert (by_name["connections"]["children"], by_name["connections"]["running"]) == (1, 1)


async def test_a_request_for_a_route_of_the_application_is_handed_its_whole_stream(daemon: Daemon) -> None:
    """On TCP, a request whose path is a route (a query aside) goes to the route's handler with
    the bytes read of it; other paths, and the Unix socket, stay the page's."""

    async def route(stream: trio.abc.Stream, received: bytes) -> None:
        seen = received
        while b"\r\n\r\n" not in seen:
            seen += await stream.receive_some(4096)
        await stream.send_all(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(seen), seen))

    daemon.host.routes["/routed"] = route
    port = int(daemon.info.url.rsplit(":", 1)[1].split("/")[0])

    async def ask(target: str, *, unix: bool = False) -> bytes:
        stream: trio.abc.Stream = (await trio.open_unix_socket(daemon.info.socket) if unix
                                   else await trio.open_tcp_stream("127.0.0.1", port))
        async with stream:
            await stream.send_all(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            answer = b""
            with trio.fail_after(LIMIT):  # both the route and the page close after one answer
                while chunk := await stream.receive_some(4096):
                    answer += chunk
            return answer

    assert b"200 OK" in (routed := await ask("/routed?x=1")) and b"GET /routed?x=1 HTTP/1.1" in routed
    assert b"GET " not in await ask("/routed/more")
    assert b"GET " not in await ask("/routed", unix=True)
