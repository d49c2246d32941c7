"""The LSP actor: one language server for one workspace root, restarted when it dies or hangs.

It owns one server process at a time (an *incarnation*: ``open_child`` with the daemon's ledger,
a fresh ``LspCore`` and ``Connection``). When an incarnation ends without being asked to —
a crash, a framing error, a hang the watchdog killed — the actor restarts it under its restart
policy (``[lsp] restart_intensity`` in ``restart_period``, the session backoff in between);
beyond that it is ``failed``: no process runs and every call answers ``failed`` at once,
until the actor is stopped as idle (below); the next write then tries a fresh one.
Leaving the actor (the ``lsp`` supervisor stopping it, the daemon stopping) closes the process:
``shutdown`` and ``exit``, stdin closed, then SIGTERM and SIGKILL to the process group and to
any descendant that left it, so node children do not outlive their server.

Restart type ``transient`` under the ``lsp`` supervisor: the actor returns (a normal exit, so
it is not restarted) after ``idle_timeout`` seconds without a call, which closes its server —
a pyright per workspace root costs ~130 MB — and the next write starts it again; a bug that
makes it raise gets it restarted by the supervisor. Callers use the handle's
``diagnostics`` directly: everything it touches is the current connection's state, which only
this actor's tasks change; there is nothing to serialise through an inbox.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import trio

from actors.lsp.connection import Connection, ConnectionLost
from actors.lsp.core import LspCore, Result
from actors.lsp.servers import ServerDef
from protocol import jsonrpc
from protocol.errors import CorralError
from protocol.messages import LspServerInfo
from supervisor.ledger.store import Ledger
from supervisor.proc.child import Goodbye, ProcessChild, ProcessSpec, open_child
from supervisor.tree.backoff import GiveUp, RestartTracker

if TYPE_CHECKING:
    from actors.lsp.service import LspSettings

__all__ = ["LspServer", "Outcome"]

log = logging.getLogger("corral.lsp")

Outcome = tuple[Literal["ok", "timeout", "crashed", "failed"], Result | None]
"""What one server says about one write: its state for the report, and the result if ``ok``."""


class LspServer:
    """The actor's handle (what ``run`` passes to ``task_status.started``)."""

    def __init__(self, definition: ServerDef, root: str, program: str, *,
                 settings: LspSettings, ledger: Ledger | None,
                 on_change: Callable[[], None] | None = None,
                 rng: random.Random | None = None) -> None:
        self.definition = definition
        self.root = root
        self.program = program
        self.settings = settings
        self.ledger = ledger
        self.state: Literal["starting", "running", "restarting", "failed"] = "starting"
        self.pid: int | None = None
        self.restarts = 0
        self.last_error: str | None = None
        self.ended = False
        """Whether ``run`` has returned (idle) or been stopped: this handle is done with."""
        self._rng = rng
        self._on_change = on_change
        self._conn: Connection | None = None
        self._changed = trio.Event()
        self._active = 0
        self._last_used = trio.current_time()

    @property
    def name(self) -> str:
        return f"{self.definition.id}@{self.root}"

    async def run(self, *, task_status: trio.TaskStatus[LspServer] = trio.TASK_STATUS_IGNORED) -> None:
        """Report ready at once (the server starts in the background: callers wait for it within
        their own deadline), then keep one incarnation running until cancelled, or return
        (a normal exit) once nobody asked anything for ``idle_timeout`` seconds."""
        task_status.started(self)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._idle_watch, nursery.cancel_scope)
                await self._serve()
        finally:
            self.ended = True
            self._pulse()

    async def _idle_watch(self, scope: trio.CancelScope) -> None:
        while True:
            await trio.sleep_until(self._last_used + self.settings.idle_timeout)
            if self._active == 0 and trio.current_time() >= self._last_used + self.settings.idle_timeout:
                log.info("language server %s idle for %g s: stopping it", self.name,
                         self.settings.idle_timeout)
                scope.cancel()
                return

    async def _serve(self) -> None:
        tracker = RestartTracker(self.settings.restart, rng=self._rng)
        while True:
            reason = await self._incarnation()
            self.last_error = reason
            decision = tracker.next(trio.current_time())
            if isinstance(decision, GiveUp):
                self._set("failed")
                log.warning("language server %s failed: %d restarts in %g s (last: %s)", self.name,
                            decision.restarts, decision.period, reason)
                await trio.sleep_forever()
            log.info("language server %s ended (%s); restarting in %.2f s", self.name, reason,
                     decision.delay)
            self._set("restarting")
            await trio.sleep(decision.delay)
            self.restarts += 1

    async def diagnostics(self, path: str, text: str, *, settle_timeout: float) -> Outcome:
        """Give the server ``text`` for ``path`` and wait for its diagnostics of that text.

        Waits ``settle_timeout`` seconds, plus ``startup_timeout`` while the server is cold
        (starting, or no diagnostics from it yet); a server still starting is waited for. A
        server that dies while it has this text is ``crashed``: the text is not given to the
        next incarnation, which a text that crashes the server would only crash again.
        Never raises for the server's faults.
        """
        language = self.definition.language_of(path)
        if language is None:
            raise ValueError(f"{self.definition.id} does not check {path}")  # the caller's bug
        self._active += 1
        try:
            return await self._diagnostics(path, language, text, settle_timeout)
        finally:
            self._active -= 1
            self._last_used = trio.current_time()

    async def _diagnostics(self, path: str, language: str, text: str, settle_timeout: float) -> Outcome:
        conn = self._conn
        cold = conn is None or not conn.ready.is_set() or not conn.warm
        deadline = trio.current_time() + settle_timeout + (self.settings.startup_timeout if cold else 0)
        while True:
            if self.state == "failed":
                return "failed", None
            conn = self._conn
            if conn is None or not conn.ready.is_set() or conn.closed.is_set():
                if trio.current_time() >= deadline:
                    return "timeout", None
                changed = self._changed
                with trio.move_on_at(deadline):
                    await changed.wait()
                continue
            try:
                result = await conn.diagnostics(path, language, text, deadline=deadline,
                                                settle=self.definition.settle)
            except ConnectionLost:
                return "crashed", None
            return ("ok", result) if result is not None else ("timeout", None)

    def info(self) -> LspServerInfo:
        """The row of ``lsp.list``."""
        return LspServerInfo(root=self.root, server=self.definition.id, state=self.state,
                             pid=self.pid, restarts=self.restarts)

    # --- one incarnation -------------------------------------------------------------------

    async def _incarnation(self) -> str:
        """Run one server process to its end; returns why it ended."""
        definition, settings = self.definition, self.settings
        core = LspCore(self.root, initialization_options=definition.initialization_options,
                       settings=definition.settings, max_documents=settings.max_documents,
                       client_version=settings.client_version)
        spec = ProcessSpec(
            key=f"lsp:{definition.id}:{self.root}", kind=f"lsp:{definition.id}",
            argv=[self.program, *definition.command[1:]], cwd=self.root, env=definition.env,
            shutdown=settings.shutdown_timeout, framing="content_length")
        self._set("starting")
        try:
            async with open_child(spec, ledger=self.ledger, goodbye=_goodbye(core)) as child:
                conn = Connection(core, child, name=self.name, request_timeout=settings.request_timeout,
                                  startup_timeout=settings.startup_timeout)
                self._conn, self.pid = conn, child.pid
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._report_ready, conn)
                    reason = await conn.run()
                    nursery.cancel_scope.cancel()
            status = child.status
        except CorralError as exc:  # LaunchFailed, StorageFailed: counted like a crash
            return exc.message
        finally:
            self._conn, self.pid = None, None
            self._pulse()
        if status is not None and reason == "exited":
            return _describe(status.reason, status.exit_code, status.signal)
        return reason

    async def _report_ready(self, conn: Connection) -> None:
        await conn.ready.wait()
        self._set("running")

    def _set(self, state: Literal["starting", "running", "restarting", "failed"]) -> None:
        self.state = state
        self._pulse()

    def _pulse(self) -> None:
        self._changed.set()
        self._changed = trio.Event()
        if self._on_change is not None:
            self._on_change()


def _goodbye(core: LspCore) -> Goodbye:
    """LSP's own goodbye for the close sequence: ``shutdown``, its answer, then ``exit``."""

    async def goodbye(child: ProcessChild) -> None:
        rid, frame = core.shutdown()
        await child.send(frame)
        async for payload in child.frames():
            try:
                message = jsonrpc.decode(payload)
            except CorralError:
                break
            if isinstance(message, jsonrpc.Response | jsonrpc.ErrorResponse) and message.id == rid:
                break
        await child.send(core.exit())

    return goodbye


def _describe(reason: str, code: int | None, signal: str | None) -> str:
    if signal is not None:
        return f"{reason} by {signal}"
    return f"{reason} with code {code}"
