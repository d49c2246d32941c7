"""What one session may reach: its MCP servers under the names it knows them by.

A ``SessionMcp`` maps the session's server names to registry actors (shared by fingerprint)
and carries the session's bearer token for the shared endpoint. Native sessions use it
directly (``tools()``, ``call()``: one request and one answer each, to and from the worker);
vendor CLIs reach it through the endpoint (``actors.mcp.endpoint``), which finds the binding by
token; ``harness_servers`` gives the ``HarnessRequest.mcp_servers`` entries that point a
vendor CLI there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from actors.mcp.results import CallOutcome, ToolInfo, split_name
from protocol.errors import CorralError, McpUnknownServer, McpUnknownTool

if TYPE_CHECKING:
    from actors.mcp.actor import McpActor
    from actors.mcp.registry import McpRegistry

__all__ = ["SessionMcp"]


class SessionMcp:
    """One session's MCP servers: ``routes`` maps its name → (registry name, allow-list)."""

    def __init__(self, registry: McpRegistry, session_id: str, token: str,
                 routes: dict[str, tuple[str, frozenset[str] | None]]) -> None:
        self.registry = registry
        self.session_id = session_id
        self.token = token
        self.routes = routes

    @property
    def names(self) -> list[str]:
        """The server names as the session knows them."""
        return list(self.routes)

    async def tools(self, servers: list[str] | None = None, timeout: float | None = None) -> list[ToolInfo]:
        """The tools of the session's servers (or of ``servers``), named ``mcp__NAME__TOOL`` with
        the session's names; idle servers start, in parallel. Never cached here: each call reads
        the actors' current lists, so a tool added by ``list_changed`` shows on the next call."""
        chosen = servers if servers is not None else self.names
        found: dict[str, list[ToolInfo]] = {}

        async def one(local: str) -> None:
            actor, allow = self._route(local)
            found[local] = await actor.list_tools(timeout, as_name=local, allow=allow)

        async with trio.open_nursery() as nursery:
            for local in chosen:
                nursery.start_soon(one, local)
        return [tool for local in chosen for tool in found[local]]

    async def call(self, server: str, tool: str, arguments: dict[str, Any] | None = None,
                   timeout: float | None = None) -> CallOutcome:
        """Call ``tool`` of the session's ``server``; raises the typed errors of ``McpActor.call``."""
        actor, allow = self._route(server)
        return await actor.call(tool, arguments, timeout, allow=allow)

    async def call_named(self, name: str, arguments: dict[str, Any] | None = None,
                         timeout: float | None = None) -> CallOutcome:
        """Call a tool by its full name ``mcp__SERVER__TOOL`` and never raise a ``CorralError``:
        a failure comes back as an error outcome carrying its code (what a model is shown)."""
        parts = split_name(name)
        try:
            if parts is None:
                raise McpUnknownTool(f"{name!r} is not an MCP tool name (mcp__SERVER__TOOL)")
            return await self.call(parts[0], parts[1], arguments, timeout)
        except CorralError as exc:
            return CallOutcome(content=[{"type": "text", "text": f"[{exc.code.value}] {exc.message}"}],
                               is_error=True, error_code=exc.code.value)

    def _route(self, local: str) -> tuple[McpActor, frozenset[str] | None]:
        route = self.routes.get(local)
        if route is None:
            raise McpUnknownServer(f"this session has no MCP server {local!r}", data={"server": local})
        return self.registry.get(route[0]), route[1]
