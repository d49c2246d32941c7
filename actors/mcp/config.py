"""The ``[mcp]`` config section and the server definitions it (and ``session.create``) yields.

```toml
[mcp]
max_result_bytes = 1048576        # a tool result larger than this is clipped

[mcp.servers.fs]                  # stdio: a command the daemon runs and supervises
command = "mcp-server-filesystem"
args = ["/srv/data"]
env = { TOKEN = "…" }
cwd = "/srv"
tools = ["read_file"]             # allow-list of bare tool names; absent: every tool
startup_timeout = 30              # seconds for the spawn and the MCP handshake
call_timeout = 60                 # seconds for one tool call

[mcp.servers.search]              # streamable HTTP: a connection with reconnect
url = "https://example.test/mcp"
headers = { Authorization = "Bearer …" }
enabled = false                   # kept in the file, not offered to sessions
```

A ``Definition`` is one server as the registry sees it, whatever declared it; its
``fingerprint`` (command, args, env and cwd, or url and headers) decides which definitions share
one actor. Names, allow-lists and timeouts are not part of it: two sessions that give the same
command different names share one process.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated, Literal

import msgspec
from msgspec import Meta, Struct

from protocol.errors import BadRequest
from protocol.models import McpServer

__all__ = ["Definition", "McpConfig", "McpServerConfig", "definition_of", "validate_name"]

_PositiveSeconds = Annotated[float, Meta(gt=0)]
_Bytes = Annotated[int, Meta(ge=1024)]

DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 60.0

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class McpServerConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A ``[mcp.servers.NAME]`` table: a stdio ``command`` or an HTTP ``url``, and its limits."""

    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    enabled: bool = True
    tools: list[str] | None = None
    startup_timeout: _PositiveSeconds = DEFAULT_STARTUP_TIMEOUT
    call_timeout: _PositiveSeconds = DEFAULT_CALL_TIMEOUT


class McpConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[mcp]``: the servers offered to every session, and the bound on results."""

    servers: dict[str, McpServerConfig] = {}
    max_result_bytes: _Bytes = 1024 * 1024

    def config_warnings(self) -> list[tuple[str, str]]:
        """A server table that defines no server (neither or both of ``command`` and ``url``, a
        bad name) is named here; the registry leaves it out (``usable``)."""
        return [(f"servers.{name}", f"{problem}; server ignored")
                for name, problem in _problems(self.servers).items()]

    def usable(self) -> dict[str, McpServerConfig]:
        """The enabled server tables that define a server, by name."""
        bad = _problems(self.servers)
        return {name: table for name, table in self.servers.items()
                if table.enabled and name not in bad}


class Definition(Struct, frozen=True, kw_only=True):
    """One MCP server as the registry runs it. ``env`` and ``headers`` may hold secrets."""

    name: str
    transport: Literal["stdio", "http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    tools: frozenset[str] | None = None
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT

    @property
    def fingerprint(self) -> str:
        """A digest of what makes two definitions the same server process or connection."""
        if self.transport == "stdio":
            key: list[object] = ["stdio", self.command, list(self.args), sorted(self.env.items()), self.cwd]
        else:
            key = ["http", self.url, sorted((k.lower(), v) for k, v in self.headers.items())]
        return hashlib.sha256(msgspec.json.encode(key)).hexdigest()[:16]

    def allows(self, tool: str) -> bool:
        """Whether the bare tool name passes this definition's allow-list."""
        return self.tools is None or tool in self.tools


def validate_name(name: str) -> str:
    """A server name must fit in ``mcp__NAME__TOOL`` and in a URL path: ``[A-Za-z0-9_-]{1,64}``
    without ``__`` (which would make a full tool name ambiguous)."""
    if not _NAME.match(name) or "__" in name:
        raise BadRequest(f"MCP server name {name!r} must match [A-Za-z0-9_-]{{1,64}} without '__'")
    return name


def definition_of(name: str, server: McpServerConfig | McpServer) -> Definition:
    """The ``Definition`` of a config table or a ``session.create`` entry; ``BadRequest`` if it
    names neither or both of ``command`` and ``url``."""
    validate_name(name)
    if (server.command is None) == (server.url is None):
        raise BadRequest(f"MCP server {name!r} needs exactly one of command or url")
    startup = server.startup_timeout or DEFAULT_STARTUP_TIMEOUT
    call = server.call_timeout or DEFAULT_CALL_TIMEOUT
    if startup <= 0 or call <= 0:
        raise BadRequest(f"MCP server {name!r}: timeouts must be positive")
    return Definition(
        name=name,
        transport="stdio" if server.command is not None else "http",
        command=server.command, args=tuple(server.args), env=dict(server.env), cwd=server.cwd,
        url=server.url, headers=dict(server.headers),
        tools=frozenset(server.tools) if server.tools is not None else None,
        startup_timeout=startup, call_timeout=call,
    )


def _problems(servers: dict[str, McpServerConfig]) -> dict[str, str]:
    problems: dict[str, str] = {}
    for name, table in servers.items():
        try:
            definition_of(name, table)
        except BadRequest as exc:
            problems[name] = exc.message
    return problems
