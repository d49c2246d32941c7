"""How the composition root builds the MCP parts: config, registry, shared endpoint, children.

The ``[mcp]`` section is read here from the config file that was loaded, because the config
root (``supervisor.config.Config``) may not name application sections; once the root lives
with the application it carries an ``mcp: McpConfig`` field and that is used instead.
"""

from __future__ import annotations

import logging
import secrets
import tomllib
from typing import Any
from collections.abc import Sequence

import msgspec


from actors.mcp.actor import ActorDeps
from actors.mcp.config import McpConfig, mcp_section
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

    def __init__(self, registry: McpRegistry, endpoint: McpEndpoint, warnings: list[str]) -> None:
        self.registry = registry
        self.endpoint = endpoint
        self.warnings = warnings

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
    config, warnings = _section(loaded)
    sessions = loaded.config.sessions
    policy = RestartPolicy(
        intensity=sessions.restart_intensity, period=sessions.restart_period,
        backoff=Backoff(initial=sessions.backoff_initial, factor=sessions.backoff_factor,
                        max=sessions.backoff_max, jitter=sessions.backoff_jitter))
    deps = ActorDeps(policy=policy, ledger=ledger, frame_limit=loaded.config.children.frame_limit,
                     stderr_lines=loaded.config.children.stderr_lines,
                     max_result_bytes=config.max_result_bytes)
    registry = McpRegistry(config, deps)
    return McpParts(registry, McpEndpoint(registry, refuse), warnings)


def _section(loaded: LoadedConfig[Any]) -> tuple[McpConfig, list[str]]:
    own = getattr(loaded.config, "mcp", None)
    if isinstance(own, McpConfig):
        return own, []
    if loaded.source is None:
        return McpConfig(), []
    try:
        table = tomllib.loads(loaded.source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return McpConfig(), [f"cannot read the [mcp] section of {loaded.source}: {exc}"]
    return mcp_section(table.get("mcp"))


