"""What a vendor CLI session is given: ``HarnessRequest.mcp_servers`` entries.

By default every server the session may use (the config's, plus its own) is one URL entry on
the shared endpoint with the session's bearer token, so the CLI reaches the daemon's one
shared server process. ``options.mcp_direct = true`` keeps the older behaviour: the CLI is
handed the definitions themselves and spawns (or connects to) each server on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from actors.mcp.config import Definition
from actors.mcp.registry import McpRegistry
from protocol.errors import ActorGone, BadRequest
from protocol.models import McpServer

__all__ = ["harness_servers"]

ENDPOINT_WAIT = 60.0
"""Seconds a session's creation waits for the shared endpoint to listen (its first use imports
the MCP SDK and hypercorn, a second or more on a loaded machine)."""


async def harness_servers(registry: McpRegistry, session_id: str, servers: Sequence[McpServer],
                          options: Mapping[str, Any]) -> list[McpServer]:
    """The ``mcp_servers`` to put in the session's ``HarnessRequest`` (binds the session).

    Raises ``BadRequest`` for a malformed server entry or option, ``ActorGone`` if the shared
    endpoint is not running.
    """
    direct = options.get("mcp_direct", False)
    if not isinstance(direct, bool):
        raise BadRequest("options.mcp_direct must be true or false")
    if direct:
        own = {server.name for server in servers}
        return [*(_entry(d) for d in registry.offered if d.name not in own), *servers]
    binding = await registry.bind(session_id, servers)
    if not binding.names:
        return []
    url = registry.endpoint_url
    if url is None and registry.endpoint is not None:
        url = await registry.endpoint.wanted_url(ENDPOINT_WAIT)
    if url is None:
        raise ActorGone("the shared MCP endpoint is not running")
    header = {"Authorization": f"Bearer {binding.token}"}
    return [McpServer(name=name, url=f"{url}/{name}", headers=dict(header)) for name in binding.names]


def _entry(definition: Definition) -> McpServer:
    return McpServer(name=definition.name, command=definition.command, args=list(definition.args),
                     env=dict(definition.env), url=definition.url, headers=dict(definition.headers),
                     cwd=definition.cwd)
