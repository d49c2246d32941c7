"""The client library against a real daemon in this process, and against a scripted daemon.

The real daemon (``run_daemon`` in the test's nursery, real fake-harness children) covers the
handshake, every request kind, events and permissions. The scripted daemon speaks the
protocol over a memory stream under the autojump clock, so ``lagged``, stale frames, dead
connections and timeouts happen exactly when the test says.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing
from trio_websocket import ConnectionClosed, WebSocketConnection, wrap_server_stream

from protocol.errors import (
    AlreadyDecided,
    DaemonNotRunning,
    Timeout,
    Unauthorized,
    UnknownSession,
)
from protocol.events import Assistant, Exit, Permission, PermissionDecided, Result, Status, Tool
from protocol.messages import SessionList, SessionListResult
from protocol.models import ConnectionInfo
from supervisor import __version__
from supervisor.client.connect import open_client, open_client_on
from supervisor.client.subscription import ConnectionLost
from supervisor.config import LoadedConfig
from supervisor.server.config import DaemonConfig
from actors.app import Config, serve as run_daemon
from supervisor.client.follow import follow_session
from supervisor.statedir import DaemonFile, StateDir

LIMIT = 60  # real seconds for anything that involves real processes


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A short directory: a Unix socket path must fit in 108 bytes."""
    path = Path(tempfile.mkdtemp(prefix="cc-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


class _Daemon:
    """An in-process daemon that can be stopped and started again on the same state dir."""

    def __init__(self, root: Path, nursery: trio.Nursery) -> None:
        self.root = root
        self.nursery = nursery
        self.stopped = trio.Event()

    async def start(self) -> DaemonFile:
        self.stopped = trio.Event()
        loaded = LoadedConfig(Config(daemon=DaemonConfig(port=0)), None, [])
        info: DaemonFile = await self.nursery.start(self._run, loaded)
        return info

    async def _run(self, loaded: LoadedConfig[Config], *, task_status: trio.TaskStatus[DaemonFile]) -> None:
        try:
            await run_daemon(self.root, loaded, port=0, task_status=task_status)
        finally:
            self.stopped.set()

    async def stop(self) -> None:
        async with open_client(self.root) as client:
            await client.shutdown()
        await self.stopped.wait()


@pytest.fixture
async def daemon(short_dir: Path, nursery: trio.Nursery) -> AsyncIterator[_Daemon]:
    running = _Daemon(short_dir / "state", nursery)
    with trio.fail_after(LIMIT):
        await running.start()
    yield running
    if not running.stopped.is_set():
        with trio.fail_after(LIMIT):
            await running.stop()


async def _until(events: AsyncIterator[object], kind: type) -> list[object]:
    """Collect events up to and including the first of ``kind``."""
    seen = []
    async for frame in events:
        seen.append(frame)
        if isinstance(getattr(frame, "event", None), kind):
            return seen
    raise AssertionError(f"the events ended before a {kind.__name__}")


# --- against the real daemon -------------------------------------------------------------------


async def test_handshake_status_and_harnesses(daemon: _Daemon) -> None:
    with trio.fail_after(LIMIT):
        async with open_client(daemon.root) as client:
            assert client.connection_id.startswith("c-")
            assert client.daemon_pid == os.getpid()
            status = await client.status()
            assert (status.pid, status.sessions, status.clients) == (os.getpid(), 0, 1)
            assert status.connections == [ConnectionInfo(connection_id=client.connection_id, name="cli",
                                                         version=__version__)]
            async with open_client(daemon.root, name="my-editor") as other:
                listed = (await client.status()).connections
                assert [(c.connection_id, c.name) for c in listed] == [
                    (client.connection_id, "cli"), (other.connection_id, "my-editor")]
        async with open_client(daemon.root, transport="tcp") as client:
            assert "fake" in {h.harness for h in await client.harnesses()}
            assert await client.request(SessionList(id=7)) == SessionListResult(sessions=[])


async def test_no_daemon_file_means_not_running(short_dir: Path) -> None:
    with pytest.raises(DaemonNotRunning) as caught:
        async with open_client(short_dir):
            pass
    assert str(short_dir) in caught.value.message
    assert "corral start" in caught.value.message


async def test_stale_daemon_file_means_not_running(short_dir: Path) -> None:
    state = StateDir(short_dir)
    state.token()
    state.write_daemon_file(DaemonFile(pid=1, url="ws://127.0.0.1:9/v1", socket=str(short_dir / "gone.sock"),
                                       version="0", started_at="now"))
    with trio.fail_after(LIMIT):
        for transport in ("unix", "tcp"):
            with pytest.raises(DaemonNotRunning, match="not running"):
                async with open_client(short_dir, transport=transport):  # type: ignore[arg-type]
                    pass


async def test_wrong_token_is_unauthorized(daemon: _Daemon) -> None:
    token = daemon.root / "token"
    real = token.read_text()
    token.write_text("not-the-token\n")
    try:
        with trio.fail_after(LIMIT), pytest.raises(Unauthorized):
            async with open_client(daemon.root):
                pass
    finally:
        token.write_text(real)


async def test_session_prompt_and_events(daemon: _Daemon, short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        async with open_client(daemon.root) as client:
            info = await client.create("fake", str(short_dir), name="t")
            assert (info.harness, info.name, info.cwd) == ("fake", "t", str(short_dir))
            async with aclosing(client.events(info.id)) as events:
                assert await client.prompt(info.id, "hi") in ("prompted", "held")
                seen = await _until(events, Result)
            text = "".join(f.event.text for f in seen if isinstance(f.event, Assistant))  # type: ignore[attr-defined]
            assert text == "echo: hi"
            last = (await client.get(info.id)).last_seq
            async with aclosing(client.events(info.id, 0, follow=False)) as events:
                replay = [frame async for frame in events]
            assert [f.seq for f in replay] == list(range(1, last + 1))
            assert [f.seq for f in seen] == [f.seq for f in replay][: len(seen)]
            assert info.id in {s.id for s in await client.sessions()}


async def test_unknown_session(daemon: _Daemon) -> None:
    with trio.fail_after(LIMIT):
        async with open_client(daemon.root) as client:
            with pytest.raises(UnknownSession):
                await client.get("s-nope")
            with pytest.raises(UnknownSession):
                await client.prompt("s-nope", "hi")
            with pytest.raises(UnknownSession):
                async with aclosing(client.events("s-nope")) as events:
                    await events.__anext__()
            assert (await client.status()).pid == os.getpid()  # the connection carries on


async def test_permission_answer_and_second_answer(daemon: _Daemon, short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        async with open_client(daemon.root) as client:
            sid = (await client.create("fake", str(short_dir))).id
            async with aclosing(client.events(sid)) as events:
                await client.prompt(sid, "/ask echo hi")
                asked = (await _until(events, Permission))[-1].event  # type: ignore[attr-defined]
                assert asked.permission_id == "p1"
                await client.permission(sid, "p1", "allow")
                decided = (await _until(events, PermissionDecided))[-1].event  # type: ignore[attr-defined]
                assert (decided.decision, decided.by, decided.by_name) == ("allow", client.connection_id, "cli")
                tools = [f.event for f in await _until(events, Result) if isinstance(f.event, Tool)]  # type: ignore[attr-defined]
                assert tools[-1].output == "hi\n"
            with pytest.raises(AlreadyDecided):
                await client.permission(sid, "p1", "deny")


async def test_full_local_buffer_resubscribes_without_loss(daemon: _Daemon, short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        async with open_client(daemon.root) as client:
            sid = (await client.create("fake", str(short_dir))).id
            async with aclosing(client.events(sid)) as events:
                for n in range(3):
                    await client.prompt(sid, f"turn {n}")
                    await _until(events, Result)
            last = (await client.get(sid)).last_seq
        async with open_client(daemon.root, subscription_buffer=2) as slow:
            seqs = []
            async with aclosing(slow.events(sid, 1, follow=False)) as events:
                async for frame in events:
                    seqs.append(frame.seq)
                    await trio.testing.wait_all_tasks_blocked()  # let the reader overrun the buffer
            assert seqs == list(range(1, last + 1))
            assert slow.resubscriptions >= 1


async def test_follow_session_waits_for_the_daemon_and_resumes(daemon: _Daemon, short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        async with open_client(daemon.root) as client:
            sid = (await client.create("fake", str(short_dir))).id
            async with aclosing(client.events(sid)) as events:
                await client.prompt(sid, "one")
                await _until(events, Result)
        retries: list[DaemonNotRunning] = []
        retried = trio.Event()

        def on_retry(error: DaemonNotRunning, delay: float) -> None:
            retries.append(error)
            retried.set()

        seqs: list[int] = []
        async with follow_session(daemon.root, sid, 1, on_retry=on_retry, retry_first=0.05) as frames:
            async for item in frames:  # live: follow the first turn
                seqs.append(item.seq)
                if item.frame is not None and isinstance(item.frame.event, Result):
                    break
            await daemon.stop()  # closes the session and drops the connection
            await retried.wait()
            assert isinstance(retries[0], ConnectionLost)
            retried = trio.Event()
            await retried.wait()  # it keeps retrying while no daemon runs
            assert not isinstance(retries[-1], ConnectionLost)
            await daemon.start()
            async for item in frames:
                seqs.append(item.seq)
                if item.frame is not None and isinstance(item.frame.event, Status) \
                        and item.frame.event.state == "closed":
                    break
        assert seqs == list(range(1, seqs[-1] + 1))
        async with open_client(daemon.root) as client:
            assert (await client.get(sid)).last_seq == seqs[-1]
            async with aclosing(client.events(sid, 0, follow=False)) as events:
                kinds = [type(f.event) async for f in events]
            assert Exit in kinds


# --- against a scripted daemon ---------------------------------------------------------------


class _Script:
    """The far end of a memory stream, speaking the protocol as the test scripts it."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws

    async def receive(self) -> dict[str, object]:
        frame: dict[str, object] = msgspec.json.decode(await self.ws.get_message())
        return frame

    async def send(self, **frame: object) -> None:
        await self.ws.send_message(msgspec.json.encode(frame).decode())

    async def welcome(self) -> None:
        assert (await self.receive())["type"] == "hello"
        await self.send(type="welcome", protocol=1, connection_id="c-9",
                        daemon={"version": "x", "pid": 1})

    async def event(self, seq: int, text: str = "x") -> None:
        await self.send(type="event", session_id="s-1", seq=seq, ts="t",
                        event={"type": "assistant", "text": text, "delta": True})


async def _scripted(nursery: trio.Nursery, script: object) -> trio.abc.Stream:
    """A client stream whose peer runs ``script(_Script)`` once the upgrade is accepted."""
    client_stream, server_stream = trio.testing.memory_stream_pair()

    async def serve() -> None:
        request = await wrap_server_stream(nursery, server_stream)  # type: ignore[arg-type]
        ws = await request.accept()
        await script(_Script(ws))  # type: ignore[operator]

    nursery.start_soon(serve)
    return client_stream


async def test_lagged_resubscribes_from_last_plus_one(autojump_clock: trio.testing.MockClock,
                                                      nursery: trio.Nursery) -> None:
    subscribes: list[int] = []

    async def script(peer: _Script) -> None:
        await peer.welcome()
        first = await peer.receive()
        subscribes.append(first["from_seq"])  # type: ignore[arg-type]
        await peer.send(type="ok", id=first["id"], result={"last_seq": 5})
        for seq in (1, 2, 3):
            await peer.event(seq)
        await peer.send(type="lagged", session_id="s-1", last_seq=3)
        again = await peer.receive()
        subscribes.append(again["from_seq"])  # type: ignore[arg-type]
        await peer.event(9, "stale")  # in flight from the old subscription: must be dropped
        await peer.send(type="ok", id=again["id"], result={"last_seq": 6})
        for seq in (3, 4, 5):  # 3 is a duplicate
            await peer.event(seq)
        await trio.sleep_forever()

    stream = await _scripted(nursery, script)
    async with open_client_on(stream, "t") as client:
        async with aclosing(client.events("s-1", 1, follow=False)) as events:
            frames = [f async for f in events]
    assert [f.seq for f in frames] == [1, 2, 3, 4, 5]
    assert "stale" not in {f.event.text for f in frames}  # type: ignore[attr-defined]
    assert subscribes == [1, 4]
    assert client.resubscriptions == 1


async def test_dropped_connection_fails_requests(autojump_clock: trio.testing.MockClock,
                                                 nursery: trio.Nursery) -> None:
    async def script(peer: _Script) -> None:
        await peer.welcome()
        await peer.receive()
        await peer.ws.aclose()

    stream = await _scripted(nursery, script)
    async with open_client_on(stream, "t") as client:
        with pytest.raises(ConnectionLost):
            await client.status()
        assert not client.connected
        start = trio.current_time()
        with pytest.raises(ConnectionLost):
            await client.sessions()
        assert trio.current_time() == start


async def test_request_timeout(autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    async def script(peer: _Script) -> None:
        await peer.welcome()
        await peer.receive()
        await trio.sleep_forever()

    stream = await _scripted(nursery, script)
    async with open_client_on(stream, "t", request_timeout=5) as client:
        start = trio.current_time()
        with pytest.raises(Timeout):
            await client.status()
        assert trio.current_time() - start == pytest.approx(5)


async def test_handshake_timeout(autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    async def script(peer: _Script) -> None:
        await trio.sleep_forever()

    stream = await _scripted(nursery, script)
    with pytest.raises(Timeout):
        async with open_client_on(stream, "t", connect_timeout=3):
            pass
    assert trio.current_time() == pytest.approx(3)


async def test_errors_in_the_block_propagate_unwrapped(autojump_clock: trio.testing.MockClock,
                                                       nursery: trio.Nursery) -> None:
    async def script(peer: _Script) -> None:
        await peer.welcome()
        await trio.sleep_forever()

    stream = await _scripted(nursery, script)
    with pytest.raises(KeyError):
        async with open_client_on(stream, "t"):
            raise KeyError("mine")


async def _closing_peer(nursery: trio.Nursery) -> tuple[trio.abc.Stream, list[int | None], trio.Event]:
    """A scripted daemon that answers the close handshake at once; it records the close code it saw."""
    codes: list[int | None] = []
    gone = trio.Event()

    async def script(peer: _Script) -> None:
        await peer.welcome()
        try:
            await peer.ws.get_message()
        except ConnectionClosed as exc:
            codes.append(exc.reason.code if exc.reason is not None else None)
        gone.set()

    return await _scripted(nursery, script), codes, gone


async def test_a_cancelled_client_closes_without_waiting_for_the_handshake(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    # Ctrl-C on ``corral attach`` cancels the scope around the client, its websocket reader
    # included: the daemon's half of the close handshake could no longer be received, so
    # leaving the block must not wait for it (it waited CLOSE_TIMEOUT, 2 s, before).
    stream, codes, gone = await _closing_peer(nursery)
    with trio.CancelScope() as scope:
        async with open_client_on(stream, "t"):
            start = trio.current_time()
            scope.cancel()
            await trio.sleep_forever()
    assert trio.current_time() == start
    await gone.wait()
    assert codes == [1006]  # the daemon sees the connection end (no close frame)


async def test_a_client_leaving_normally_closes_with_the_handshake(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    stream, codes, gone = await _closing_peer(nursery)
    async with open_client_on(stream, "t"):
        pass
    await gone.wait()
    assert codes == [1000]


async def test_discovery_reads_its_files_off_the_event_loop(
    short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    readers: list[int] = []
    read = StateDir.read_daemon_file

    def spy(self: StateDir) -> DaemonFile | None:
        readers.append(threading.get_ident())
        return read(self)

    monkeypatch.setattr(StateDir, "read_daemon_file", spy)
    with pytest.raises(DaemonNotRunning):
        async with open_client(short_dir / "no-daemon"):
            pass
    assert readers and loop_thread not in readers


async def test_a_new_subscription_waits_for_the_last_ones_unsubscribe(
        autojump_clock: trio.testing.MockClock, nursery: trio.Nursery) -> None:
    """Following a session again at once on the same connection (the ACP facade's load after a
    resume): a late unsubscribe of the first follower would end the second's subscription on
    the daemon, so the second subscribe goes out only once the unsubscribe was answered."""
    seen: list[str] = []

    async def script(peer: _Script) -> None:
        await peer.welcome()
        while True:
            try:
                request = await peer.receive()
            except ConnectionClosed:
                return
            seen.append(str(request["type"]))
            if request["type"] == "session.unsubscribe":
                await trio.sleep(1)  # a daemon slow to answer
                seen.append("unsubscribe answered")
                await peer.send(type="ok", id=request["id"], result={})
            else:
                await peer.send(type="ok", id=request["id"], result={"last_seq": 1})
                await peer.event(1)

    stream = await _scripted(nursery, script)
    async with open_client_on(stream, "t") as client:
        for _ in range(2):
            async with aclosing(client.events("s-1", 1)) as events:
                assert (await anext(events)).seq == 1
    assert seen[:4] == ["session.subscribe", "session.unsubscribe", "unsubscribe answered",
                        "session.subscribe"]
