"""The ``mcp`` supervisor's owner: one actor per distinct server definition, found by name.

``McpRegistry.run`` is the ``mcp`` child of the daemon's root supervisor: a
``simple_one_for_one`` supervisor (``supervisor.tree``) whose children are the MCP actors,
permanent (an actor handles its server's crashes itself; the supervisor restarts an actor
only if the actor's own code fails). The servers of ``[mcp.servers.*]`` are children from the
start, idle until first used; a session's own servers are added by ``ensure`` when a session
binds them. Definitions with the same fingerprint share one actor (one process), whatever
name each declarer gave it.

The API other actors use: ``ensure(definition) -> name``, ``tools_for(names)``,
``call(server, tool, args, timeout)``, ``restart(name)``, ``infos()``; and ``bind`` for the
per-session view (``actors.mcp.binding``) that native sessions and the shared endpoint use.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import trio

from actors.mcp.actor import ActorDeps, McpActor
from actors.mcp.binding import SessionMcp
from actors.mcp.config import Definition, McpConfig, definition_of
from actors.mcp.results import CallOutcome, ToolInfo
from protocol.errors import ActorGone, McpUnknownServer
from protocol.models import McpServer, McpServerInfo
from supervisor.tree import ChildSpec, RestartType, Strategy, Supervisor, SupervisorSpec, supervise

if TYPE_CHECKING:
    from actors.mcp.endpoint import McpEndpoint

__all__ = ["McpRegistry"]

log = logging.getLogger("corral.mcp")

_ACTOR_SHUTDOWN = 8.0  # an actor closes its server: the process close sequence (5 s) and a margin


class McpRegistry:
    """Every supervised MCP server by name, and the bindings of the sessions that use them."""

    def __init__(self, config: McpConfig, deps: ActorDeps) -> None:
        self.config = config
        self.deps = deps
        self.endpoint_url: str | None = None  # set by the shared endpoint once it listens
        self.endpoint: McpEndpoint | None = None  # the shared endpoint, which listens once wanted
        self._actors: dict[str, McpActor] = {}
        self._by_fingerprint: dict[str, str] = {}
        self._bindings: dict[str, SessionMcp] = {}
        self._by_token: dict[str, SessionMcp] = {}
        self._supervisor: Supervisor | None = None
        self.offered: list[Definition] = []  # the enabled config servers, offered to every session
        for name, table in config.usable().items():  # the loader warned about the others
            definition = definition_of(name, table)
            self.offered.append(definition)
            self._register(definition)

    async def run(self, *, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED) -> None:
        """The ``mcp`` supervisor: start an (idle) actor per config server, then serve."""
        children = [self._spec(actor) for actor in self._actors.values()]
        spec = SupervisorSpec(strategy=Strategy.SIMPLE_ONE_FOR_ONE, intensity=5, period=10.0)
        try:
            await supervise(spec, children, name="mcp", task_status=_Recorded(task_status, self))
        finally:
            self._supervisor = None

    # --- the registry API -------------------------------------------------------------------

    def infos(self) -> list[McpServerInfo]:
        """Every server for ``mcp.list``, in the order they were declared."""
        return [actor.info() for actor in self._actors.values()]

    def get(self, name: str) -> McpActor:
        """The actor named ``name``; ``McpUnknownServer`` if there is none."""
        actor = self._actors.get(name)
        if actor is None:
            raise McpUnknownServer(f"no MCP server named {name!r}", data={"server": name})
        return actor

    async def ensure(self, definition: Definition) -> str:
        """The name of the actor that runs ``definition``, adding one (idle) if none does."""
        known = self._by_fingerprint.get(definition.fingerprint)
        if known is not None:
            return known
        actor = self._register(definition)
        if self._supervisor is None:
            raise ActorGone("the mcp supervisor is not running")
        try:
            await self._supervisor.start_child(self._spec(actor))
        except BaseException:
            self._forget(actor)
            raise
        return actor.name

    async def tools_for(self, names: Sequence[str], timeout: float | None = None) -> list[ToolInfo]:
        """The tools of the servers ``names`` (started if idle, in parallel), each filtered by its
        own definition's allow-list and named ``mcp__NAME__TOOL``."""
        actors = [self.get(name) for name in names]
        found: dict[str, list[ToolInfo]] = {}

        async def one(actor: McpActor) -> None:
            found[actor.name] = await actor.list_tools(timeout, allow=actor.definition.tools)

        async with trio.open_nursery() as nursery:
            for actor in actors:
                nursery.start_soon(one, actor)
        return [tool for actor in actors for tool in found[actor.name]]

    async def call(self, server: str, tool: str, arguments: dict[str, Any] | None = None,
                   timeout: float | None = None) -> CallOutcome:
        """Call ``tool`` (a bare name) on ``server``; the typed errors of ``McpActor.call``."""
        actor = self.get(server)
        return await actor.call(tool, arguments, timeout, allow=actor.definition.tools)

    async def restart(self, name: str) -> McpServerInfo:
        """``mcp.restart``: start ``name`` afresh (a failed one included); its state after."""
        return await self.get(name).restart()

    # --- sessions ---------------------------------------------------------------------------

    async def bind(self, session_id: str, servers: Sequence[McpServer] = ()) -> SessionMcp:
        """What session ``session_id`` may use: every config server, plus (winning on a name
        clash) its own ``servers``. Each gets an actor (shared by fingerprint), which starts now
        if idle, so that a CLI finds it warm. Binding again replaces the session's earlier
        binding and token."""
        chosen: dict[str, Definition] = {d.name: d for d in self.offered}
        for server in servers:
            chosen[server.name] = definition_of(server.name, server)
        routes = {name: (await self.ensure(definition), definition.tools)
                  for name, definition in chosen.items()}
        self.unbind(session_id)
        for name, _ in routes.values():
            self._actors[name].want()
        binding = SessionMcp(self, session_id, secrets.token_urlsafe(32), routes)
        self._bindings[session_id] = binding
        self._by_token[binding.token] = binding
        return binding

    def unbind(self, session_id: str) -> None:
        """Forget a session's binding; its token stops working at once."""
        binding = self._bindings.pop(session_id, None)
        if binding is not None:
            self._by_token.pop(binding.token, None)

    def rekey(self, old: str, new: str | None) -> None:
        """Give the binding made under ``old`` to session ``new`` (``None``: drop it)."""
        binding = self._bindings.pop(old, None)
        if binding is None:
            return
        if new is None:
            self._by_token.pop(binding.token, None)
            return
        self.unbind(new)
        binding.session_id = new
        self._bindings[new] = binding

    def binding(self, session_id: str) -> SessionMcp | None:
        return self._bindings.get(session_id)

    def by_token(self, token: str) -> SessionMcp | None:
        """The binding a bearer token belongs to (compared in constant time)."""
        for known, binding in self._by_token.items():
            if secrets.compare_digest(known, token):
                return binding
        return None

    # --- internals --------------------------------------------------------------------------

    def _register(self, definition: Definition) -> McpActor:
        name = definition.name
        if name in self._actors:
            name = f"{definition.name}-{definition.fingerprint[:6]}"
        actor = McpActor(name, definition, self.deps)
        self._actors[name] = actor
        self._by_fingerprint[definition.fingerprint] = name
        return actor

    def _forget(self, actor: McpActor) -> None:
        self._actors.pop(actor.name, None)
        self._by_fingerprint.pop(actor.definition.fingerprint, None)

    def _spec(self, actor: McpActor) -> ChildSpec:
        return ChildSpec(id=f"mcp:{actor.name}", start=actor.run, restart=RestartType.PERMANENT,
                         shutdown=_ACTOR_SHUTDOWN)


class _Recorded(trio.TaskStatus[Supervisor]):
    """Keeps the supervisor's handle on the registry as it reports ready."""

    def __init__(self, outer: trio.TaskStatus[Supervisor], registry: McpRegistry) -> None:
        self._outer = outer
        self._registry = registry

    def started(self, value: Supervisor | None = None) -> None:
        self._registry._supervisor = value
        self._outer.started(value)  # type: ignore[arg-type]
