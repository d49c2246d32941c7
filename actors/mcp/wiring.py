"""How the composition root builds the MCP parts: config, registry, shared endpoint, children.

The ``[mcp]`` section is the config root's ``mcp`` field (``actors.mcp.config.McpConfig``,
decoded and warned about by the generic loader like every other section).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from typing import Any

import msgspec

from actors.mcp.actor import ActorDeps
from actors.mcp.config import McpConfig
from actors.mcp.endpoint import McpEndpoint, Refuse
from actors.mcp.inject import harness_servers
from actors.mcp.registry import McpRegistry
from protocol.messages import SessionCreate
from supervisor.config import LoadedConfig
from supervisor.ledger import Ledger
from supervisor.tree import Backoff, ChildSpec, ChildType, RestartPolicy

__all__ = ["SHARED_HARNESSES", "McpParts", "mcp_parts"]

SHARED_HARNESSES = frozenset({"claude", "codex"})
"""Harnesses whose CLI reaches the daemon's servers over the shared endpoint (HTTP MCP)."""

log = logging.getLogger("corral.mcp")


class McpParts:
    """The registry (the ``mcp`` supervisor) and the shared endpoint, as root children."""

    def __init__(self, registry: McpRegistry, endpoint: McpEndpoint) -> None:
        self.registry = registry
        self.endpoint = endpoint

    async def prepare(self, request: SessionCreate) -> tuple[SessionCreate, str | None]:
        """``session.create`` with its ``mcp_servers`` pointed at the shared endpoint, for the
        harnesses that take HTTP MCP servers; and the key of the binding made for it (to
        ``adopt`` once the session has an id). Others pass through unchanged."""
        if request.harness not in SHARED_HARNESSES:
            return request, None
        key = f"pending-{secrets.token_hex(8)}"
        entries = await harness_servers(self.registry, key, request.mcp_servers or [], request.options or {})
        return msgspec.structs.replace(request, mcp_servers=entries or None), key

    def adopt(self, key: str | None, session_id: str | None) -> None:
        """Move the binding made by ``prepare`` to the session's id (``None``: creation failed)."""
        if key is not None:
            self.registry.rekey(key, session_id)

    def release(self, session_id: str) -> None:
        """The session ended: its token stops working."""
        self.registry.unbind(session_id)

    def children(self) -> Sequence[ChildSpec]:
        """``mcp`` (a supervisor of one actor per server) then ``mcp-endpoint``, in start order."""
        return [
            ChildSpec(id="mcp", start=self.registry.run, type=ChildType.SUPERVISOR, shutdown=15.0),
            ChildSpec(id="mcp-endpoint", start=self.endpoint.run, shutdown=3.0),
        ]


def mcp_parts(loaded: LoadedConfig[Any], ledger: Ledger | None, refuse: Refuse) -> McpParts:
    """Build the MCP parts from the loaded configuration (servers restart under the session
    restart policy: the same intensity, period and backoff)."""
    config = _section(loaded)
    sessions = loaded.config.sessions
    policy = RestartPolicy(
        intensity=sessions.restart_intensity, period=sessions.restart_period,
        backoff=Backoff(initial=sessions.backoff_initial, factor=sessions.backoff_factor,
                        max=sessions.backoff_max, jitter=sessions.backoff_jitter))
    deps = ActorDeps(policy=policy, ledger=ledger, frame_limit=loaded.config.children.frame_limit,
                     stderr_lines=loaded.config.children.stderr_lines,
                     max_result_bytes=config.max_result_bytes)
    registry = McpRegistry(config, deps)
    return McpParts(registry, McpEndpoint(registry, refuse))


def _section(loaded: LoadedConfig[Any]) -> McpConfig:
    own = getattr(loaded.config, "mcp", None)
    return own if isinstance(own, McpConfig) else McpConfig()
