"""The daemon process: boot, serve, shut down. Generic: the application comes in as a parameter.

Boot order (each step before the next): take the state directory's lock; become a child
subreaper; reconcile the crash ledger (kill what a crashed daemon left behind) before anything
is spawned; let the application boot (it reads its durable state); create the token; bind the
listening sockets; start the root supervisor; write ``daemon.json`` (its presence means "ready").

The root supervisor (one_for_one) starts, in order: the orphan reaper, the connection
supervisor, the application's own children (its supervisors), the listener. Stopping goes in
reverse: the listener first (no new clients), then the application's children (sessions run
their close sequence while their clients still watch), then the connections (each sends what
its sessions wrote before it closes), then the reaper.

SIGTERM, SIGINT or ``Host.stop()`` stop it: ``daemon.json`` goes first (no new client finds
it), then the tree. A second signal kills every child the ledger records, through the
start-token-checked ledger kill.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import trio

from protocol.base import format_ts
from protocol.messages import SupervisorInfo
from protocol.models import ChildProcess, DaemonInfo
from supervisor import __version__
from supervisor.server.config import DaemonConfig
from supervisor.ledger import Ledger, reconcile
from supervisor.proc.prctl import set_child_subreaper
from supervisor.proc.reaper import run_orphan_reaper
from supervisor.server.connection import Backend
from supervisor.server.listener import HttpRoute, Sockets, bind, run_listener
from supervisor.server.roster import Roster
from supervisor.statedir import DaemonFile, StateDir
from supervisor.tree import ChildSpec, ChildType, RestartType, Strategy, Supervisor, SupervisorSpec
from supervisor.tree import SupervisorStats, supervise

__all__ = ["Application", "Host", "run_daemon"]

log = logging.getLogger("corral.daemon")


class Host:
    """What the daemon offers the application: the ledger, counts, statistics and ``stop``."""

    def __init__(self, state: StateDir, config: DaemonConfig) -> None:
        self.state = state
        self.config = config
        self.ledger = Ledger(state.root)
        self.info = DaemonInfo(version=__version__, pid=os.getpid())
        self.started = time.monotonic()
        self.stopping = trio.Event()
        self.root: Supervisor | None = None
        self.connections: Supervisor | None = None
        self.roster = Roster()
        """The open connections and the names their clients gave."""
        self.routes: dict[str, HttpRoute] = {}
        """HTTP paths the application serves on the daemon's port (the listener's ``routes``)."""
        self.port = 0
        """The daemon's TCP port, once bound."""
        self.delivery: Callable[[float], None] | None = None
        """Told the seconds from each live event's publish to its write to a client (the
        application's metric), by every connection."""

    def stop(self) -> None:
        """Begin the graceful shutdown (idempotent)."""
        self.stopping.set()

    @property
    def uptime(self) -> float:
        return round(time.monotonic() - self.started, 3)

    @property
    def clients(self) -> int:
        """Connections that are open (handshake or beyond)."""
        if self.connections is None:
            return 0
        return sum(1 for _ in self.connections.which_children())

    def children(self) -> list[ChildProcess]:
        """Every live child process the ledger records."""
        return [ChildProcess(key=r.key, kind=r.kind, pid=r.pid) for r in self.ledger.rows()]

    def statistics(self) -> list[SupervisorStats]:
        """A snapshot of every supervisor in the tree, root first (depth-first)."""
        out: list[SupervisorStats] = []
        if self.root is not None:
            _walk(self.root, out)
        return out

    def supervisors(self) -> list[SupervisorInfo]:
        """``statistics()`` as ``daemon.status`` reports it."""
        return [SupervisorInfo(name=s.name, strategy=s.strategy.value, intensity=s.intensity,
                               period=s.period, restarts=s.restarts,
                               restarts_in_period=s.restarts_in_period, children=len(s.children),
                               running=s.running)
                for s in self.statistics()]


class Application(Backend, Protocol):
    """The application the daemon serves: boots from disk, owns supervisors, answers requests."""

    def boot(self, host: Host) -> None:
        """Read durable state (after the ledger reconcile, before anything listens)."""

    def children(self) -> Sequence[ChildSpec]:
        """The application's own children of the root supervisor, in start order."""


async def run_daemon(state: StateDir, config: DaemonConfig, app: Application, host: Host, *,
                     port: int | None = None,
                     task_status: trio.TaskStatus[DaemonFile] = trio.TASK_STATUS_IGNORED) -> None:
    """Run the daemon on ``state`` until it is stopped. The state directory's lock is held throughout."""
    state.ensure()
    state.acquire_lock()
    try:
        set_child_subreaper()
        # Bound first: a taken port is the one line a failed start prints, with no log before it.
        sockets = await bind(host=config.host, port=config.port if port is None else port,
                             socket_path=state.socket_path)
        host.port = sockets.port
        try:
            report = await trio.to_thread.run_sync(reconcile, state.root)
            log.info("reconciled the crash ledger: %s", report)
            app.boot(host)
            token = state.token()
            await _serve(state, config, app, host, token, sockets, task_status)
        finally:
            sockets.close()
    finally:
        state.remove_daemon_file()
        state.release_lock()


async def _serve(state: StateDir, config: DaemonConfig, app: Application, host: Host, token: str,
                 sockets: Sockets, task_status: trio.TaskStatus[DaemonFile]) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_signals, host)
        root_scope, root_done = trio.CancelScope(), trio.Event()
        host.root = await nursery.start(_root, root_scope, root_done, _children(config, app, host, token, sockets))
        info = DaemonFile(pid=os.getpid(), url=f"ws://127.0.0.1:{sockets.port}/v1",
                          socket=str(state.socket_path), version=__version__,
                          started_at=format_ts(time.time()))
        state.write_daemon_file(info)
        log.info("corral %s listening on %s and %s", __version__, info.url, info.socket)
        task_status.started(info)
        await host.stopping.wait()
        log.info("shutting down (at most %g s)", config.shutdown_timeout)
        state.remove_daemon_file()
        root_scope.cancel()  # the root supervisor stops its children in reverse order
        await root_done.wait()
        nursery.cancel_scope.cancel()


async def _root(scope: trio.CancelScope, done: trio.Event, children: list[ChildSpec], *,
                task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED) -> None:
    try:
        with scope:
            await supervise(SupervisorSpec(strategy=Strategy.ONE_FOR_ONE, intensity=3, period=10.0),
                            children, name="daemon", task_status=task_status)
    finally:
        done.set()


def _children(config: DaemonConfig, app: Application, host: Host, token: str,
              sockets: Sockets) -> list[ChildSpec]:
    """The root's children in start order; they stop in reverse (see the module docstring)."""

    async def connections(*, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED) -> None:
        # Connections are temporary: a crashed one is logged and gone, never restarted, so the
        # intensity only matters for the supervisor's own bookkeeping.
        spec = SupervisorSpec(strategy=Strategy.SIMPLE_ONE_FOR_ONE, intensity=0, period=1.0)
        await supervise(spec, name="connections", task_status=_Recorded(task_status, host))

    async def listener(*, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        if host.connections is None:
            raise RuntimeError("the connection supervisor starts before the listener")
        await run_listener(sockets, host.connections, app, token=token, info=host.info,
                           frame_limit=config.frame_limit, queue_size=config.client_queue,
                           handshake_timeout=config.handshake_timeout,
                           extra_origins=config.allowed_origins, roster=host.roster,
                           routes=host.routes, delivery=host.delivery, task_status=task_status)

    return [
        ChildSpec(id="orphan-reaper", start=run_orphan_reaper, shutdown=1.0),
        # Each connection flushes for at most ~5 s (listener._DISCONNECT_TIMEOUT), all at once.
        ChildSpec(id="connections", start=connections, shutdown=6.0, type=ChildType.SUPERVISOR),
        *app.children(),
        ChildSpec(id="listener", start=listener, shutdown=2.0, restart=RestartType.PERMANENT),
    ]


class _Recorded(trio.TaskStatus[Supervisor]):
    """Passes the connection supervisor's readiness on, keeping its handle on the host."""

    def __init__(self, outer: trio.TaskStatus[Supervisor], host: Host) -> None:
        self._outer = outer
        self._host = host

    def started(self, value: Supervisor | None = None) -> None:
        self._host.connections = value
        self._outer.started(value)  # type: ignore[arg-type]


def _walk(supervisor: Supervisor, out: list[SupervisorStats]) -> None:
    out.append(supervisor.statistics())
    for child in supervisor.which_children():
        if child.type is ChildType.SUPERVISOR and isinstance(child.handle, Supervisor):
            _walk(child.handle, out)


async def _signals(host: Host) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            if not host.stopping.is_set():
                log.info("signal %s: stopping gracefully", signal.Signals(signum).name)
                host.stop()
            else:
                log.warning("second signal: killing every recorded child now")
                killed = await trio.to_thread.run_sync(host.ledger.kill_recorded)
                log.warning("killed %d recorded child process group(s)", len(killed))

