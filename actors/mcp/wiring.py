"""How the composition root builds the MCP parts: config, registry, shared endpoint, children.

The ``[mcp]`` section is read here from the config file that was loaded, because the config
root (``supervisor.config.Config``) may not name application sections; once the root lives
with the application it carries an ``mcp: McpConfig`` field and that is used instead.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Sequence


from actors.mcp.actor import ActorDeps
from actors.mcp.config import McpConfig, mcp_section
from actors.mcp.endpoint import McpEndpoint, Refuse
from actors.mcp.registry import McpRegistry
from supervisor.config import LoadedConfig
from supervisor.ledger import Ledger
from supervisor.tree import Backoff, ChildSpec, ChildType, RestartPolicy

__all__ = ["McpParts", "mcp_parts"]

log = logging.getLogger("corral.mcp")


class McpParts:
    """The registry (the ``mcp`` supervisor) and the shared endpoint, as root children."""

    def __init__(self, registry: McpRegistry, endpoint: McpEndpoint, warnings: list[str]) -> None:
        self.registry = registry
        self.endpoint = endpoint
        self.warnings = warnings

    def children(self) -> Sequence[ChildSpec]:
        """``mcp`` (a supervisor of one actor per server) then ``mcp-endpoint``, in start order."""
        return [
            ChildSpec(id="mcp", start=self.registry.run, type=ChildType.SUPERVISOR, shutdown=15.0),
            ChildSpec(id="mcp-endpoint", start=self.endpoint.run, shutdown=3.0),
        ]


def mcp_parts(loaded: LoadedConfig, ledger: Ledger | None, refuse: Refuse) -> McpParts:
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


def _section(loaded: LoadedConfig) -> tuple[McpConfig, list[str]]:
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


