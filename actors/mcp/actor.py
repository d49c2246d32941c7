"""One supervised MCP server: its connection, its restarts, its cached lists, and its calls.

Theory of operation
-------------------
An ``McpActor`` is a permanent child of the ``mcp`` supervisor. Its task (``run``) owns the
server's connection (``actors.mcp.connection``): nothing runs until the first use (``call``,
``tools``, ``restart``) sets ``wanted``; then the loop connects, lists tools, resources and
prompts, publishes the connection (state ``running``) and waits for it to end.

An end the actor did not ask for (the process exited, the HTTP session broke, the start or the
handshake failed or took longer than ``startup_timeout``) is a crash, decided by the tree's
restart planner (``RestartTracker``) under the session restart policy: the first restart in a
period is immediate, later ones wait out the backoff (state ``starting``, no pid), and past the
intensity the server is ``failed``: no process runs and every call fails at once with
``mcp.server_failed``, while its last tool list stays listed, until ``restart``.

Calls run in the caller's task, concurrently, on the published connection: the SDK multiplexes
them. Each call is bounded (``call_timeout``): on expiry or cancellation the SDK sends MCP's
``notifications/cancelled`` for it. A call in flight when the connection is lost is cancelled
at once and fails with ``mcp.server_crashed``; it is not retried (a tool may have side effects).

Lists (tools, resources, prompts) live in ``actors.mcp.lists``: read when a connection starts,
read again when the server announces a change (``list_changed`` on 2025-11-25, a
``subscriptions/listen`` stream on 2026-07-28), kept across restarts and failure.
"""

from __future__ import annotations

import logging
import math
import random
from typing import TYPE_CHECKING, Any

import trio

from actors.mcp.config import Definition
from actors.mcp.lists import Lists
from actors.mcp.results import CallOutcome, ToolInfo, bound_result, full_name, tool_info
from protocol.errors import (
    CorralError,
    McpCallFailed,
    McpCallTimeout,
    McpServerCrashed,
    McpServerFailed,
    McpStartFailed,
    McpUnknownTool,
)
from protocol.models import McpServerInfo, McpServerState
from supervisor.threadimport import load
from supervisor.ledger import Ledger
from supervisor.tree import GiveUp, RestartPolicy, RestartTracker

if TYPE_CHECKING:  # the SDK (a second of imports) loads on a server's first start, not with the daemon
    from actors.mcp.connection import Connection, Connector

__all__ = ["ActorDeps", "McpActor"]

log = logging.getLogger("corral.mcp")

_SETTLE_WAIT = 5.0
"""Seconds a listing waits for a tools list the server announced changed to be read again."""

Allow = frozenset[str] | None
"""An allow-list of bare tool names; ``None`` allows every tool."""


class ActorDeps:
    """What every MCP actor shares: the restart policy, the ledger and the output limits."""

    def __init__(self, *, policy: RestartPolicy, ledger: Ledger | None, frame_limit: int = 16 << 20,
                 stderr_lines: int = 200, max_result_bytes: int = 1 << 20, mode: str = "auto",
                 rng: random.Random | None = None, connector: Connector | None = None) -> None:
        self.policy = policy
        # How a connection is opened; tests give an in-memory one. ``None`` is the SDK's
        # (``actors.mcp.connection.connect``), imported in a worker thread on the first start.
        self.connector = connector
        self.ledger = ledger
        self.frame_limit = frame_limit
        self.stderr_lines = stderr_lines
        self.max_result_bytes = max_result_bytes
        self.mode = mode  # "auto" negotiates the newest era the server speaks; tests pin "legacy"
        self.rng = rng


class McpActor:
    """The handle of one MCP server actor; its methods are the server's API."""

    def __init__(self, name: str, definition: Definition, deps: ActorDeps) -> None:
        self.name = name
        self.definition = definition
        self.deps = deps
        self.state: McpServerState = "idle"
        self.restarts = 0
        self.last_error: str | None = None
        self.lists = Lists(name, self._notify)
        self.starts = 0
        self._live: Connection | None = None
        self._wanted = trio.Event()
        self._changed = trio.Event()
        self._kick = trio.Event()  # restart asked: end the current connection or leave `failed`
        self._tracker = RestartTracker(deps.policy, rng=deps.rng)

    # --- the API ---------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        live = self._live
        return live.pid if live is not None and self.state == "running" else None

    def info(self) -> McpServerInfo:
        """A snapshot for ``mcp.list``."""
        return McpServerInfo(name=self.name, state=self.state, pid=self.pid,
                             tools=[info.name for info in self.tool_infos(allow=self.definition.tools)],
                             restarts=self.restarts,
                             last_error=self.last_error, transport=self.definition.transport)

    def tool_infos(self, as_name: str | None = None, allow: Allow = None) -> list[ToolInfo]:
        """The cached tools that pass ``allow``, named after ``as_name`` (default: ours).

        Allow-lists belong to whoever declared the server (a config table, a session), not to
        the shared actor, so the caller passes its own.
        """
        return [tool_info(as_name or self.name, tool) for tool in self.lists.tools
                if allow is None or tool.name in allow]

    async def list_tools(self, timeout: float | None = None, *, as_name: str | None = None,
                         allow: Allow = None) -> list[ToolInfo]:
        """Start the server if it is idle, wait for it (bounded), and return its tools.

        A server that cannot start, or is ``failed``, answers with the tools it listed last
        (possibly none): its tools stay listed, and calling them fails with a typed error.
        """
        try:
            await self._connection(trio.current_time() + (timeout or self.definition.startup_timeout))
        except (McpServerFailed, McpStartFailed):
            pass
        with trio.move_on_after(_SETTLE_WAIT):  # a change announced, not yet read: wait for it
            await self.lists.settled()
        return self.tool_infos(as_name, allow)

    async def call(self, tool: str, arguments: dict[str, Any] | None = None,
                   timeout: float | None = None, *, allow: Allow = None) -> CallOutcome:
        """Call ``tool`` and return its (bounded) result; ``timeout`` bounds the whole call,
        a lazy start included (default: the definition's ``call_timeout``).

        Raises ``McpUnknownTool``, ``McpServerFailed`` (at once), ``McpStartFailed``,
        ``McpServerCrashed``, ``McpCallTimeout`` or ``McpCallFailed``. Cancelling the caller
        cancels the call on the server too (MCP's cancellation notification).
        """
        if allow is not None and tool not in allow:
            raise McpUnknownTool(f"{full_name(self.name, tool)} is not allowed by the server's tools list",
                                 data={"server": self.name, "tool": tool})
        limit = timeout if timeout is not None else self.definition.call_timeout
        deadline = trio.current_time() + limit
        live = await self._connection(deadline)
        import mcp_types  # loaded with the connection: these are dictionary look-ups
        from mcp.shared.exceptions import MCPError
        from pydantic import ValidationError

        if tool not in {t.name for t in self.lists.tools}:
            raise McpUnknownTool(f"{self.name} lists no tool {tool!r}", data={"server": self.name, "tool": tool})
        with trio.CancelScope() as lost:
            live.track(lost)
            try:
                with trio.move_on_at(deadline) as expiry:
                    result = await live.client.call_tool(tool, arguments or {})
                    return bound_result(result, self.deps.max_result_bytes)
            except MCPError as exc:
                if exc.error.code == mcp_types.CONNECTION_CLOSED:
                    await self._settle_loss(live)
                    raise McpServerCrashed(self._crash_message(live), data={"server": self.name}) from None
                raise McpCallFailed(f"{self.name} refused {tool}: {exc.error.message}",
                                    data={"server": self.name, "rpc_code": exc.error.code}) from None
            except ValidationError as exc:
                raise McpCallFailed(f"{self.name} answered {tool} with an invalid result: {exc.error_count()} "
                                    "error(s)", data={"server": self.name}) from None
            except Exception as exc:  # the transport broke under the call (socket, HTTP, stream)
                live.lose(f"transport error: {_reason(exc)}")
                raise McpServerCrashed(self._crash_message(live), data={"server": self.name}) from None
            finally:
                live.untrack(lost)
        if lost.cancelled_caught:
            raise McpServerCrashed(self._crash_message(live), data={"server": self.name})
        assert expiry.cancelled_caught  # the only other way out of the block without a return
        raise McpCallTimeout(f"{full_name(self.name, tool)} gave no result within {limit:g} s",
                             data={"server": self.name, "tool": tool, "timeout": limit})

    async def _settle_loss(self, live: Connection) -> None:
        """The connection closed under a call: give a dying process a moment to be reaped, so
        the loss names its exit status rather than the closed pipe."""
        if live.child is not None:
            with trio.move_on_after(1.0):
                await live.lost.wait()
        live.lose("the connection closed")

    def want(self) -> None:
        """Start the server now if it is idle, without waiting (a session that will use it was
        just made: its CLI should find it warm)."""
        self._wanted.set()

    async def restart(self, timeout: float | None = None) -> McpServerInfo:
        """Forget the crash history, end the current connection (or leave ``failed``) and start
        again; answers once the server runs, fails, or ``timeout`` passes (default: its
        ``startup_timeout`` plus a second)."""
        self._tracker.clear()
        self._kick.set()
        self._wanted.set()
        with trio.move_on_after(timeout or self.definition.startup_timeout + 1):
            while self._kick.is_set() or self.state not in ("running", "failed"):
                await self._changed.wait()
        return self.info()

    # --- the actor -------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[McpActor] = trio.TASK_STATUS_IGNORED) -> None:
        """The actor's task: idle until wanted, then connect and reconnect under the policy."""
        task_status.started(self)
        try:
            await self._wanted.wait()
            while True:
                kicked = self._kick.is_set()
                self._kick = trio.Event()
                if kicked:
                    self.restarts += 1 if self.state != "idle" else 0
                self._set("starting")
                reason = await self._run_once()
                if self._kick.is_set():
                    continue  # a restart was asked for: not a crash
                self.last_error = reason
                decision = self._tracker.next(trio.current_time())
                if isinstance(decision, GiveUp):
                    log.warning("MCP server %s failed: %s (more than %d crashes in %g s)", self.name, reason,
                                decision.intensity, decision.period)
                    self._set("failed")
                    await self._kick.wait()
                    continue
                log.warning("MCP server %s crashed (%s); restart %d in %.2f s", self.name, reason,
                            decision.attempt, decision.delay)
                self._set("starting")
                with trio.move_on_after(decision.delay):
                    await self._kick.wait()
                if not self._kick.is_set():
                    self.restarts += 1
        finally:
            self._live = None
            if self.state != "failed":
                self.state = "idle"
            self._changed.set()

    async def _run_once(self) -> str:
        """Run one connection until it ends; the reason it ended."""
        self.starts += 1
        definition = self.definition
        # The start-up bound covers the spawn, the handshake, the change subscription and the
        # first listings (a server that answers the handshake but never lists its tools is as
        # useless as a silent one); _serve lifts it once the server runs.
        startup = trio.CancelScope(deadline=trio.current_time() + definition.startup_timeout)
        try:
            with startup:
                connector = self.deps.connector or (await load("actors.mcp.connection")).connect
                async with connector(
                        definition, ledger=self.deps.ledger, frame_limit=self.deps.frame_limit,
                        stderr_lines=self.deps.stderr_lines, message_handler=self.lists.on_message,
                        mode=self.deps.mode) as live:
                    return await self._serve(live, startup)
            return f"did not start within {definition.startup_timeout:g} s"
        except BaseException as exc:  # a foreign server can fail in any way: each is a crash
            if isinstance(exc, BaseExceptionGroup):
                # Cancelled while the transport was breaking: the cancellation goes on, the
                # transport's last words (a reset socket) are only logged.
                cancelled, _ = exc.split(trio.Cancelled)
                if cancelled is not None:
                    log.debug("MCP server %s: closed while failing", self.name, exc_info=True)
                    raise cancelled from None
            if not isinstance(exc, Exception):
                raise
            log.debug("MCP server %s: connection ended by an exception", self.name, exc_info=True)
            return _reason(exc)
        finally:
            self._live = None

    async def _serve(self, live: Connection, startup: trio.CancelScope) -> str:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_child, live)
            # The subscription is acknowledged before the lists are read, so no change can
            # fall between the two.
            if live.modern:
                await nursery.start(self.lists.listen, live)
            await self.lists.refresh(live)
            startup.deadline = math.inf
            nursery.start_soon(self.lists.refresher, live)
            self._live = live
            self._set("running")
            log.info("MCP server %s running (%s, pid %s, protocol %s)", self.name,
                     self.definition.transport, live.pid, live.client.protocol_version)
            await _first(live.lost.wait, self._kick.wait)
            nursery.cancel_scope.cancel()
        live.lose("restarted on request")
        return live.reason or "lost"

    async def _watch_child(self, live: Connection) -> None:
        if live.child is None:
            return
        from actors.mcp.connection import describe_exit  # loaded with the connection

        status = await live.child.wait()
        live.lose(describe_exit(status))

    async def _connection(self, deadline: float) -> Connection:
        """The running connection, starting the server if idle; waits until ``deadline``."""
        self._wanted.set()
        with trio.move_on_at(deadline):
            while True:
                if self.state == "failed":
                    raise McpServerFailed(
                        f"MCP server {self.name} failed (last error: {self.last_error}); "
                        f"`corral mcp restart {self.name}` starts it again",
                        data={"server": self.name})
                live = self._live
                if live is not None and self.state == "running" and not live.lost.is_set():
                    return live
                await self._changed.wait()
        raise McpStartFailed(f"MCP server {self.name} is not running (last error: {self.last_error})",
                             data={"server": self.name})

    def _set(self, state: McpServerState) -> None:
        self.state = state
        self._notify()

    def _notify(self) -> None:
        """Wake every task waiting for a change of state or lists."""
        self._changed.set()
        self._changed = trio.Event()

    def _crash_message(self, live: Connection) -> str:
        return f"MCP server {self.name} went away during the call ({live.reason or 'lost'}); it is restarted"


async def _first(*waits: Any) -> None:
    """Return as soon as the first of ``waits`` (async callables) returns."""
    async with trio.open_nursery() as nursery:
        async def one(wait: Any) -> None:
            await wait()
            nursery.cancel_scope.cancel()
        for wait in waits:
            nursery.start_soon(one, wait)



def _leaf(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member groups (nurseries wrap what they pass on)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _reason(exc: BaseException) -> str:
    from mcp.shared.exceptions import MCPError  # a connection was tried: the SDK is loaded

    leaf = _leaf(exc)
    match leaf:
        case CorralError():
            return leaf.message
        case MCPError():
            return f"handshake failed: {leaf.error.message}"
    return f"{type(leaf).__name__}: {leaf}"[:300]
