"""The ``opencode`` supervisor: one shared server actor per launch fingerprint, leased by sessions.

``OpenCodeServers.run`` is a root child of the daemon: a ``simple_one_for_one`` supervisor whose
children are ``OpenCodeServer`` actors (``permanent``: a server that dies is started again with
the supervisor's backoff while sessions lease it). ``lease(launch)`` finds the server for the
launch's fingerprint or starts one, and counts the lease; ``release`` uncounts it, and the last
release stops the server and removes its child (a server stops when its last session closes).
Lookups and stops are serialized by one lock, so a lease never lands on a server being stopped.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import trio

from actors.harness import Launch
from protocol.errors import ActorGone
from supervisor.tree import ChildSpec, RestartType, Strategy, Supervisor, SupervisorSpec, supervise
from supervisor.tree.specs import UnknownChild

from .launch import fingerprint
from .server import OpenCodeServer, ServerSettings

__all__ = ["OpenCodeServers"]

log = logging.getLogger("corral.opencode")


class OpenCodeServers:
    """Every shared OpenCode server of the daemon, and the leases sessions hold on them."""

    def __init__(self, ledger: Any, *, settings: ServerSettings = ServerSettings(),
                 intensity: int = 5, period: float = 60.0) -> None:
        self.ledger = ledger
        self.settings = settings
        self._spec = SupervisorSpec(strategy=Strategy.SIMPLE_ONE_FOR_ONE, intensity=intensity,
                                    period=period)
        self._supervisor: Supervisor | None = None
        self._nursery: trio.Nursery | None = None
        self._leases: dict[str, int] = {}
        self._servers: dict[str, OpenCodeServer] = {}
        self._lock = trio.Lock()
        self._changed = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the ``opencode`` supervisor until cancelled; stopping it stops every server."""
        async with trio.open_nursery() as nursery:
            supervisor: Supervisor = await nursery.start(partial(supervise, self._spec,
                                                                 name="opencode"))
            self._supervisor = supervisor
            self._nursery = nursery
            task_status.started(supervisor)
            try:
                await trio.sleep_forever()
            finally:
                self._supervisor = self._nursery = None

    async def lease(self, launch: Launch) -> OpenCodeServer:
        """The server for ``launch`` (started if none runs); release it with ``release``."""
        key = fingerprint(launch)
        async with self._lock:
            supervisor = self._supervisor
            if supervisor is None:
                raise ActorGone("the opencode supervisor is not running")
            server = self._servers.get(key)
            if server is None:
                server = OpenCodeServer(key, launch, ledger=self.ledger, settings=self.settings,
                                        on_change=self._pulse)
                spec = ChildSpec(id=key, start=server.run, restart=RestartType.PERMANENT,
                                 shutdown=self.settings.shutdown + 5)
                await supervisor.start_child(spec)
                self._servers[key] = server
                log.info("opencode server %s started (pid %s)", key, server.pid)
            self._leases[key] = self._leases.get(key, 0) + 1
            return server

    async def release(self, server: OpenCodeServer, *, linger: bool = False) -> None:
        """Drop one lease; the last one stops the server, at once or, with ``linger`` (the
        session lost the server to a crash and is about to restart), after
        ``settings.linger`` seconds unless a lease comes back meanwhile."""
        async with self._lock:
            count = self._leases.get(server.key, 0) - 1
            self._leases[server.key] = max(count, 0)
            if count > 0:
                return
            if linger and self._nursery is not None:
                self._nursery.start_soon(self._stop_later, server)
                return
            await self._stop(server)

    async def _stop_later(self, server: OpenCodeServer) -> None:
        await trio.sleep(self.settings.linger)
        async with self._lock:
            if self._leases.get(server.key, 0) == 0 and self._servers.get(server.key) is server:
                await self._stop(server)

    async def _stop(self, server: OpenCodeServer) -> None:
        self._leases.pop(server.key, None)
        self._servers.pop(server.key, None)
        supervisor = self._supervisor
        if supervisor is None:
            return
        try:
            await supervisor.terminate_child(server.key)
            await supervisor.delete_child(server.key)
        except UnknownChild:
            pass
        log.info("opencode server %s stopped: its last session closed", server.key)

    def servers(self) -> list[OpenCodeServer]:
        """The servers with leases (for tests and statistics)."""
        return list(self._servers.values())

    def leases(self, server: OpenCodeServer) -> int:
        return self._leases.get(server.key, 0)

    async def wait_until(self, predicate: Any) -> None:
        """Wait until ``predicate()`` holds; checked whenever a server starts or ends a
        generation. Bound the wait with a cancel scope."""
        while not predicate():
            await self._changed.wait()

    def _pulse(self) -> None:
        self._changed.set()
        self._changed = trio.Event()
