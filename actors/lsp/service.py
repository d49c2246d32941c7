"""The ``lsp`` supervisor and the API the native agent's tools call through the daemon.

``LanguageServers.run`` is the root supervisor's ``lsp`` child: a ``simple_one_for_one``
supervisor whose children are ``LspServer`` actors, one per (workspace root, server id),
added lazily the first time a file that server checks is written. The root is the nearest
directory above the file holding one of the server's ``root_markers``, else the session's cwd.

``diagnostics_after_write`` asks every server that checks the file at once and merges what they
say into one ``DiagnosticsReport``. A server whose program is not installed is skipped with a
warning, logged once (and kept in ``warnings``), never an error. Asyncio-agnostic callers (the
native worker) reach it with one frame each way through the daemon; the report is a msgspec
Struct (``actors.lsp.report``) that needs no trio to decode or render.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import msgspec
import trio

from actors.lsp.config import LspConfig, resolve_servers
from actors.lsp.report import DiagnosticLine, DiagnosticsQuery, DiagnosticsReport, ServerStatus, lines_of
from actors.lsp.servers import ServerDef, find_root
from protocol.errors import ActorGone
from protocol.messages import LspServerInfo
from supervisor.ledger.store import Ledger
from supervisor.threadimport import load
from supervisor.tree import ChildSpec, RestartType, Strategy, Supervisor, SupervisorSpec, supervise
from supervisor.tree.backoff import RestartPolicy
from supervisor.tree.specs import ChildState, UnknownChild

if TYPE_CHECKING:  # the actor, its connection and the sans-IO core load with the first server
    from actors.lsp.actor import LspServer, Outcome

__all__ = ["LanguageServers", "LspSettings", "LspWarning"]

log = logging.getLogger("corral.lsp")

_MISSING_RECHECK = 30.0  # seconds before a missing program is looked for again
_READ_LIMIT = 4 * 1024 * 1024  # current_diagnostics reads at most this much of a file


class LspWarning(msgspec.Struct, frozen=True, kw_only=True):
    """A structured warning: ``code`` is stable (``lsp.binary_missing``, ``lsp.config``)."""

    code: str
    server: str | None
    message: str


class LspSettings(msgspec.Struct, frozen=True, kw_only=True):
    """The ``[lsp]`` numbers one actor needs (seconds, counts)."""

    startup_timeout: float = 10.0
    request_timeout: float = 10.0
    shutdown_timeout: float = 3.0
    idle_timeout: float = 600.0
    max_documents: int = 64
    restart: RestartPolicy = RestartPolicy()
    client_version: str = "0"


class LanguageServers:
    """Every language-server actor of the daemon, and the diagnostics API over them."""

    def __init__(self, config: LspConfig, ledger: Ledger | None, *, client_version: str = "0",
                 which: Callable[[str], str | None] = shutil.which) -> None:
        self.config = config
        self.ledger = ledger
        self.servers, problems = resolve_servers(config)
        self.warnings = [LspWarning(code="lsp.config", server=None, message=p) for p in problems]
        self.settings = LspSettings(
            startup_timeout=config.startup_timeout, request_timeout=config.request_timeout,
            shutdown_timeout=config.shutdown_timeout, idle_timeout=config.idle_timeout,
            max_documents=config.max_documents,
            restart=RestartPolicy(intensity=config.restart_intensity, period=config.restart_period),
            client_version=client_version)
        self._which = which
        self._programs: dict[str, str] = {}
        self._missing: dict[str, float] = {}
        self._warned: set[str] = set()
        self._supervisor: Supervisor | None = None
        self._server: type[LspServer] | None = None  # the actor's class, once one started
        self._changed = trio.Event()
        self._lookup = trio.Lock()  # one lookup-or-start at a time: starts are instant

    async def run(self, *, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the ``lsp`` supervisor until cancelled; stopping closes every server at once.

        The start value is the supervisor's handle, so the daemon's statistics walk into it.
        """
        spec = SupervisorSpec(strategy=Strategy.SIMPLE_ONE_FOR_ONE, intensity=5, period=60.0)
        async with trio.open_nursery() as nursery:
            supervisor: Supervisor = await nursery.start(partial(supervise, spec, name="lsp"))
            self._supervisor = supervisor
            task_status.started(supervisor)
            try:
                await trio.sleep_forever()
            finally:
                self._supervisor = None

    def handlers(self, path: str) -> list[ServerDef]:
        """The enabled servers that check ``path`` (by its extension)."""
        return [d for d in self.servers if d.language_of(path) is not None]

    async def diagnostics_after_write(self, session_cwd: str, path: str, text: str,
                                      settle_timeout: float | None = None) -> DiagnosticsReport:
        """The errors and warnings of ``text`` (just written to ``path``) from every server that
        checks such files, waiting at most ``settle_timeout`` (default ``[lsp]``'s) for them,
        plus the start-up time of a server that is cold. Never raises for a server's faults."""
        full = os.path.normpath(os.path.join(session_cwd, path))
        display = _display(full, session_cwd)
        timeout = self.config.settle_timeout if settle_timeout is None else settle_timeout
        outcomes: dict[str, Outcome] = {}
        statuses: list[ServerStatus] = []
        live: list[tuple[ServerDef, str]] = []
        for definition in self.handlers(full):
            program = self._program(definition)
            if program is None:
                statuses.append(ServerStatus(server=definition.id, state="unavailable"))
            else:
                live.append((definition, program))

        async def ask(definition: ServerDef, program: str) -> None:
            root = find_root(full, definition.root_markers, session_cwd)
            try:
                actor = await self._actor(definition, root, program)
                outcomes[definition.id] = await actor.diagnostics(full, text, settle_timeout=timeout)
            except ActorGone:
                outcomes[definition.id] = ("failed", None)

        async with trio.open_nursery() as nursery:
            for definition, program in live:
                nursery.start_soon(ask, definition, program)
        lines: list[DiagnosticLine] = []
        for definition, _ in live:
            state, result = outcomes[definition.id]
            statuses.append(ServerStatus(server=definition.id, state=state))
            if result is not None:
                lines += lines_of(display, result.items, result.text or text)
        lines.sort(key=lambda d: (d.line, d.column))
        return DiagnosticsReport(path=display, diagnostics=lines, servers=statuses, timeout=timeout)

    async def current_diagnostics(self, session_cwd: str, path: str,
                                  settle_timeout: float | None = None) -> DiagnosticsReport:
        """The diagnostics of the file as it is on disk now (the ``diagnostics {path}`` tool).

        Unchanged text keeps its version on every server, so this answers at once when the
        servers already checked it. ``OSError`` if the file cannot be read; ``ValueError`` if it
        is not UTF-8 text or larger than 4 MiB.
        """
        full = os.path.normpath(os.path.join(session_cwd, path))
        data = await trio.to_thread.run_sync(_read, full)
        return await self.diagnostics_after_write(session_cwd, full, data, settle_timeout)

    async def answer(self, session_cwd: str, query: DiagnosticsQuery) -> DiagnosticsReport:
        """Serve one ``DiagnosticsQuery`` frame of a session whose cwd is ``session_cwd``.

        A file that cannot be read (``text`` None) gives a report with no servers, not an error.
        """
        if query.text is not None:
            return await self.diagnostics_after_write(session_cwd, query.path, query.text,
                                                      query.settle_timeout)
        try:
            return await self.current_diagnostics(session_cwd, query.path, query.settle_timeout)
        except (OSError, ValueError) as exc:
            log.info("diagnostics of %s: cannot read it: %s", query.path, exc)
            return DiagnosticsReport(path=query.path)

    def infos(self) -> list[LspServerInfo]:
        """One row per actor, in start order (``lsp.list``)."""
        return [actor.info() for actor in self.actors()]

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` holds; it is checked whenever an actor changes state
        (starting, running, restarting, failed, stopped). Bound the wait with a cancel scope."""
        while not predicate():
            await self._changed.wait()

    def actors(self) -> list[LspServer]:
        """The running actors' handles (for tests and statistics)."""
        server = self._server
        if self._supervisor is None or server is None:
            return []
        return [c.handle for c in self._supervisor.which_children()
                if isinstance(c.handle, server) and not c.handle.ended]

    # --- internals -------------------------------------------------------------------------

    async def _actor(self, definition: ServerDef, root: str, program: str) -> LspServer:
        async with self._lookup:
            return await self._lookup_or_start(definition, root, program)

    async def _lookup_or_start(self, definition: ServerDef, root: str, program: str) -> LspServer:
        supervisor = self._supervisor
        if supervisor is None:
            raise ActorGone("the lsp supervisor is not running")
        if self._server is None:
            self._server = (await load("actors.lsp.actor")).LspServer
        server = self._server
        child_id = f"{definition.id}:{root}"
        try:
            info = supervisor.child(child_id)
            ended = isinstance(info.handle, server) and info.handle.ended
            if info.state is ChildState.STOPPED or ended:  # stopped when idle: start anew
                await supervisor.terminate_child(child_id)  # joins the exit in flight
                await supervisor.delete_child(child_id)
                raise UnknownChild(child_id)
            handle = info.handle
        except UnknownChild:
            actor = server(definition, root, program, settings=self.settings, ledger=self.ledger,
                              on_change=self._pulse)
            spec = ChildSpec(id=child_id, start=actor.run, restart=RestartType.TRANSIENT,
                             shutdown=self.config.shutdown_timeout + 2)
            handle = await supervisor.start_child(spec)
        if not isinstance(handle, server):
            raise ActorGone(f"language server {child_id} is restarting")
        return handle

    def _program(self, definition: ServerDef) -> str | None:
        """The server's program on PATH; a missing one is warned about once and looked for
        again after a while (the user may install it)."""
        name = definition.command[0]
        if (found := self._programs.get(name)) is not None:
            return found
        now = trio.current_time()
        if now < self._missing.get(name, -_MISSING_RECHECK) + _MISSING_RECHECK:
            return None
        found = self._which(name)
        if found is not None:
            self._programs[name] = found
            self._missing.pop(name, None)
            return found
        self._missing[name] = now
        if definition.id not in self._warned:
            self._warned.add(definition.id)
            message = (f"language server {definition.id!r} is not available: "
                       f"{name!r} was not found on PATH")
            self.warnings.append(LspWarning(code="lsp.binary_missing", server=definition.id,
                                            message=message))
            log.warning("%s", message)
        return None


    def _pulse(self) -> None:
        self._changed.set()
        self._changed = trio.Event()


def _display(path: str, cwd: str) -> str:
    """``path`` relative to the session's cwd when it lies inside it, else absolute."""
    relative = os.path.relpath(path, cwd)
    return path if relative.startswith("..") else relative


def _read(path: str) -> str:
    with open(path, "rb") as handle:
        data = handle.read(_READ_LIMIT + 1)
    if len(data) > _READ_LIMIT:
        raise ValueError(f"{path} is larger than {_READ_LIMIT} bytes")
    return data.decode("utf-8")
