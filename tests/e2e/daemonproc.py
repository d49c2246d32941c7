"""A real daemon process for end-to-end tests, and a raw protocol client that hides nothing.

The raw client speaks PROTOCOL.md directly over trio-websocket (no corral client code), so the
end-to-end tests check the wire contract the way any third-party client would see it.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import trio
from trio_websocket import WebSocketConnection, open_websocket_url, wrap_client_stream

from tests.daemonconfig import without_prewarm

REPO = Path(__file__).resolve().parents[2]


@dataclass
class DaemonProc:
    """A running daemon subprocess and what a client needs to reach it."""

    state_dir: Path
    process: trio.Process
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return str(self.info["url"])

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    @property
    def token(self) -> str:
        return (self.state_dir / "token").read_text().strip()

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []


async def start_daemon(state_dir: Path, *extra: str, config: str | None = None,
                       timeout: float = 30, source: Path | None = None,
                       prewarm: bool = False, new_session: bool = False) -> DaemonProc:
    """Start ``corral daemon`` on ``state_dir`` (ephemeral port); return once ``daemon.json`` exists.

    ``source`` runs the daemon from another source tree (a benchmark's baseline) instead of this one.
    The background warm-ups are off (``tests.daemonconfig``) unless ``prewarm``. ``new_session``
    starts it in a session of its own, as ``corral start`` does (a benchmark's daemon: the
    scheduler then weighs it as a started daemon, not as part of the benchmark's session).
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    if not prewarm:
        config = without_prewarm(state_dir.parent / f"{state_dir.name}-config", config)
    (state_dir / "daemon.json").unlink(missing_ok=True)
    argv = [sys.executable, "-m", "actors.app", "daemon", "--state-dir", str(state_dir),
            "--port", "0", *extra]
    if config:
        argv += ["--config", config]
    log = open(state_dir / "test-daemon.out", "ab")
    env = None if source is None else {**os.environ, "PYTHONPATH": str(source)}
    process = await trio.lowlevel.open_process(argv, stdout=log, stderr=subprocess.STDOUT,
                                               cwd=str(source or REPO), env=env,
                                               start_new_session=new_session)
    log.close()
    proc = DaemonProc(state_dir, process)
    with trio.fail_after(timeout):
        while True:
            if process.poll() is not None:
                out = (state_dir / "test-daemon.out").read_text(errors="replace")
                raise RuntimeError(f"daemon exited with {process.returncode}:\n{out}")
            try:
                proc.info = json.loads((state_dir / "daemon.json").read_text())
                return proc
            except (FileNotFoundError, json.JSONDecodeError):
                await trio.sleep(0.02)


async def stop_daemon(proc: DaemonProc, timeout: float = 30) -> int:
    """SIGTERM and wait; returns the exit code (killing it if it does not stop in time)."""
    if proc.process.returncode is None:
        proc.process.send_signal(signal.SIGTERM)
    with trio.move_on_after(timeout):
        return await proc.process.wait()
    proc.process.kill()
    await proc.process.wait()
    raise AssertionError(f"daemon did not stop within {timeout} s")


class RawClient:
    """One websocket connection: requests by id, and every pushed frame in arrival order."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self.pushed_send, self.pushed = trio.open_memory_channel[dict[str, Any]](100_000)
        self.frames: list[dict[str, Any]] = []
        self._running = trio.Event()
        self._running.set()

    def pause(self) -> None:
        """Stop reading from the socket (after the frame in hand): the client becomes slow."""
        self._running = trio.Event()

    def resume(self) -> None:
        self._running.set()

    async def send_raw(self, frame: str | bytes) -> None:
        await self.ws.send_message(frame)

    async def call(self, method: str, timeout: float = 30, **params: Any) -> dict[str, Any]:
        """Send a request; return its ``ok`` or ``error`` frame."""
        request_id = next(self._ids)
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[request_id] = send
        await self.ws.send_message(json.dumps({"type": method, "id": request_id, **params}))
        with trio.fail_after(timeout):
            return await receive.receive()

    async def ok(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a request that must succeed; return its ``result``."""
        frame = await self.call(method, **params)
        assert frame["type"] == "ok", frame
        result: dict[str, Any] = frame["result"]
        return result

    async def next_pushed(self, timeout: float = 30) -> dict[str, Any]:
        with trio.fail_after(timeout):
            return await self.pushed.receive()

    async def events_until(self, session_id: str, predicate: Any, timeout: float = 30) -> list[dict[str, Any]]:
        """Collect this session's event frames until one satisfies ``predicate``."""
        seen: list[dict[str, Any]] = []
        with trio.fail_after(timeout):
            while True:
                frame = await self.pushed.receive()
                if frame.get("session_id") != session_id:
                    continue
                seen.append(frame)
                if predicate(frame):
                    return seen

    async def reader(self) -> None:
        from trio_websocket import ConnectionClosed

        try:
            while True:
                await self._running.wait()
                frame = json.loads(await self.ws.get_message())
                self.frames.append(frame)
                if frame.get("type") in ("ok", "error") and frame.get("id") in self._waiting:
                    self._waiting.pop(frame["id"]).send_nowait(frame)
                else:
                    self.pushed_send.send_nowait(frame)
        except ConnectionClosed:
            self.pushed_send.close()


@asynccontextmanager
async def raw_client(daemon: DaemonProc, *, unix: bool = False, token: str | None = None,
                     hello: bool = True, queue: int = 1024) -> AsyncIterator[RawClient]:
    """A connected (and, by default, greeted) raw client on TCP or the Unix socket."""
    async with trio.open_nursery() as nursery:
        if unix:
            stream = await trio.open_unix_socket(daemon.info["socket"])
            ws = await wrap_client_stream(nursery, stream, "localhost", "/v1",
                                          message_queue_size=queue, max_message_size=64 * 2**20)
            async with ws:
                client = await _greet(ws, daemon, token, hello, nursery)
                yield client
                nursery.cancel_scope.cancel()
        else:
            async with open_websocket_url(daemon.url, message_queue_size=queue,
                                          max_message_size=64 * 2**20) as ws:
                client = await _greet(ws, daemon, token, hello, nursery)
                yield client
                nursery.cancel_scope.cancel()


async def _greet(ws: WebSocketConnection, daemon: DaemonProc, token: str | None, hello: bool,
                 nursery: trio.Nursery) -> RawClient:
    client = RawClient(ws)
    if hello:
        await ws.send_message(json.dumps({"type": "hello", "protocol": 1,
                                          "token": token or daemon.token,
                                          "client": {"name": "e2e", "version": "0"}}))
        welcome = json.loads(await ws.get_message())
        assert welcome["type"] == "welcome", welcome
        client.frames.append(welcome)
    nursery.start_soon(client.reader)
    return client


def wait_gone(pids: list[int], timeout: float = 20) -> list[int]:
    """Pids still alive (not zombies) after waiting up to ``timeout`` seconds."""
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return [p.pid for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def env_without_corral() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
