"""The daemon: boot, serve, shut down. The one module that wires every actor kind together.

Boot order (each step before the next): take the state directory's lock; load the
configuration; become a child subreaper; reconcile the crash ledger (kill what a crashed
daemon left behind) before anything is spawned; close sessions a crashed daemon left open;
create the token; bind the listeners; write ``daemon.json`` (its presence means "ready").
SIGTERM, SIGINT or ``daemon.shutdown`` stop it: ``daemon.json`` goes first (no new client
finds it), then the root supervisor stops its children in reverse order — the listener, every
session's close sequence (bounded, clients still watching), the connections (each flushes
what is queued), the reaper. A second signal SIGKILLs every recorded child group at once.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

import msgspec
import trio

from actors.session.actor import Session
from actors.session.registry import Sessions
from protocol.base import format_ts
from protocol.errors import UnknownMethod
from protocol.messages import (
    ClientRequest,
    DaemonShutdown,
    DaemonStatus,
    DaemonStatusResult,
    Empty,
    HarnessList,
    HarnessListResult,
    SessionClose,
    SessionCreate,
    SessionGet,
    SessionInterrupt,
    SessionPermission,
    SessionPrompt,
    SessionList,
    SessionListResult,
    SessionResult,
    SessionSetModel,
)
from protocol.models import ChildInfo, DaemonInfo

from . import __version__
from .config import Config, LoadedConfig
from .connection import Connection, FeedLike
from .harnesses import drivers
from .killing import signal_group
from .ledger import Ledger, reconcile
from .prctl import set_child_subreaper
from .reaper import run_orphan_reaper
from .specs import ChildSpec, ChildType, Strategy, SupervisorSpec
from .statedir import DaemonFile, StateDir
from .supervision import Supervisor, supervise
from .wsserver import serve

log = logging.getLogger("corral.daemon")


class Daemon:
    """The running daemon: the ``Backend`` every connection talks to."""

    def __init__(self, state: StateDir, loaded: LoadedConfig, *, port: int | None = None) -> None:
        self.state = state
        self.config: Config = loaded.config
        self.loaded = loaded
        self.port = self.config.daemon.port if port is None else port
        self.token = ""
        self.daemon = DaemonInfo(version=__version__, pid=os.getpid())
        self.started = time.monotonic()
        self.clients: dict[str, Connection] = {}
        self.ledger = Ledger(state.root)
        self.sessions = Sessions(state.root, self.config, self.ledger, drivers(self.config))
        self.stopping = trio.Event()
        self._connection_nursery: trio.Nursery | None = None

    # --- Backend ----------------------------------------------------------------------------

    async def handle(self, request: ClientRequest, connection_id: str) -> msgspec.Struct:
        match request:
            case DaemonStatus():
                return DaemonStatusResult(
                    version=__version__, pid=os.getpid(),
                    uptime_s=round(time.monotonic() - self.started, 3),
                    sessions=len(self.sessions.infos()), clients=len(self.clients),
                    children=[ChildInfo(key=r.key, kind=r.kind, pid=r.pid) for r in self.ledger.rows()],
                )
            case DaemonShutdown():
                self.stopping.set()
                return Empty()
            case HarnessList():
                return HarnessListResult(harnesses=await self.sessions.detections())
            case SessionCreate():
                return SessionResult(session=await self.sessions.create(request))
            case SessionList():
                return SessionListResult(sessions=self.sessions.infos())
            case SessionGet(session_id=sid):
                return SessionResult(session=self.sessions.get(sid).info())
            case SessionClose(session_id=sid) if not isinstance(self.sessions.get(sid), Session):
                return Empty()  # closing an ended session is a no-op
            case (SessionPrompt(session_id=sid) | SessionInterrupt(session_id=sid)
                  | SessionPermission(session_id=sid) | SessionSetModel(session_id=sid)
                  | SessionClose(session_id=sid)):
                result: msgspec.Struct = await self.sessions.live_session(sid).call(request, connection_id)
                return result
        raise UnknownMethod(f"{type(request).__name__} is not served here")

    def feed(self, session_id: str) -> FeedLike:
        return self.sessions.get(session_id).feed

    def connected(self, connection: Connection, delta: int) -> None:
        if delta > 0:
            self.clients[connection.id] = connection
        else:
            self.clients.pop(connection.id, None)

    # --- lifetime ---------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[DaemonFile] = trio.TASK_STATUS_IGNORED) -> None:
        """Boot, serve until asked to stop, shut down gracefully. The lock is held throughout."""
        self.state.ensure()
        self.state.acquire_lock()
        try:
            for warning in self.loaded.warnings:
                log.warning("config: %s", warning)
            set_child_subreaper()
            report = await trio.to_thread.run_sync(reconcile, self.state.root)
            log.info("reconciled the crash ledger: %s", report)
            revived = self.sessions.boot()
            if revived:
                log.info("closed %d session(s) left open by a crashed daemon", len(revived))
            self.token = self.state.token()
            await self._serve(task_status)
        finally:
            self.state.remove_daemon_file()
            self.state.release_lock()

    async def _serve(self, task_status: trio.TaskStatus[DaemonFile]) -> None:
        cfg = self.config.daemon
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._signals)
            root_scope, root_done = trio.CancelScope(), trio.Event()
            root = await nursery.start(self._supervise, root_scope, root_done)
            port = root.child("listener").handle
            info = DaemonFile(pid=os.getpid(), url=f"ws://127.0.0.1:{port}/v1",
                              socket=str(self.state.socket_path), version=__version__,
                              started_at=format_ts(time.time()))
            self.state.write_daemon_file(info)
            log.info("corral %s listening on %s and %s", __version__, info.url, info.socket)
            task_status.started(info)
            await self.stopping.wait()
            log.info("shutting down (at most %g s)", cfg.shutdown_timeout)
            self.state.remove_daemon_file()
            root_scope.cancel()  # the root supervisor stops its children in reverse order
            await root_done.wait()
            nursery.cancel_scope.cancel()

    async def _supervise(self, scope: trio.CancelScope, done: trio.Event, *,
                         task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            with scope:
                await supervise(SupervisorSpec(strategy=Strategy.ONE_FOR_ONE, intensity=3, period=10.0),
                                self._children(), name="daemon", task_status=task_status)
        finally:
            done.set()

    def _children(self) -> list[ChildSpec]:
        """The root supervisor's children, in start order; they stop in reverse: the listener
        first (no new clients), then the sessions (each runs its close sequence while clients
        still watch), then the connections (each flushes what is queued), then the reaper."""
        cfg = self.config.daemon
        return [
            ChildSpec(id="orphan-reaper", start=run_orphan_reaper, shutdown=1.0),
            ChildSpec(id="connections", start=self._connections, shutdown=3.0),
            ChildSpec(id="sessions", start=self.sessions.run, shutdown=cfg.shutdown_timeout + 5,
                      type=ChildType.SUPERVISOR),
            ChildSpec(id="listener", start=self._listen, shutdown=5.0),
        ]

    async def _listen(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        cfg = self.config.daemon
        connections = self._connection_nursery
        if connections is None:
            raise RuntimeError("the connections child starts before the listener")
        await serve(self._on_connection, host=cfg.host, port=self.port,
                    socket_path=self.state.socket_path, frame_limit=cfg.frame_limit,
                    extra_origins=cfg.allowed_origins, connections=connections,
                    task_status=task_status)

    async def _connections(self, *, task_status: trio.TaskStatus[trio.Nursery] = trio.TASK_STATUS_IGNORED) -> None:
        """Own every connection actor; each flushes its queue (bounded) when cancelled."""
        async with trio.open_nursery() as nursery:
            self._connection_nursery = nursery
            task_status.started(nursery)
            await trio.sleep_forever()

    async def _on_connection(self, ws: Any, transport: str) -> None:
        cfg = self.config.daemon
        await Connection(ws, self, queue_size=cfg.client_queue,
                         handshake_timeout=cfg.handshake_timeout).run()

    async def _signals(self) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                if not self.stopping.is_set():
                    log.info("signal %s: stopping gracefully", signal.Signals(signum).name)
                    self.stopping.set()
                else:
                    log.warning("second signal: killing every child now")
                    for row in self.ledger.rows():
                        signal_group(row.pgid, signal.SIGKILL)


async def run_daemon(state_root: Path, loaded: LoadedConfig, *, port: int | None = None,
                     task_status: trio.TaskStatus[DaemonFile] = trio.TASK_STATUS_IGNORED) -> None:
    """Run a daemon on ``state_root`` until it is stopped."""
    await Daemon(StateDir(state_root), loaded, port=port).run(task_status=task_status)
