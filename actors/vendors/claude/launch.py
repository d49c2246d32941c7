"""The pure launch builder: a ``HarnessRequest`` in, the Claude Code command line, env and files out.

The command is always the long-lived stream-json mode::

    claude -p --input-format stream-json --output-format stream-json --verbose
           --include-partial-messages --replay-user-messages --permission-prompt-tool stdio
           [--permission-mode M] [--allowedTools=P,…] [--model M] [--resume=ID]
           [--append-system-prompt TEXT]
           [--mcp-config FILE --strict-mcp-config] [options.extra_args…]

* ``--include-partial-messages`` streams text and thinking as deltas.
* ``--replay-user-messages`` echoes each user line we send when the CLI takes it up; that is
  how the translator learns whether a steered prompt joined the running turn.
* ``--permission-prompt-tool stdio`` routes permission prompts to us as ``can_use_tool``
  control requests, in every mode (``inherit`` included: the operator's own settings decide
  what is asked, we answer what is).
* ``--allowedTools=P,…`` carries ``permissions.allow_tools``, in every mode: the CLI then runs
  those tools without asking at all (the session's policy would allow them anyway, one round
  trip later). The patterns go verbatim, comma-separated: corral's globs on the tool name that
  are also Claude rules (``Bash``, ``mcp__fs``, ``mcp__fs__*``) mean the same to both, and a
  rule in Claude's own syntax (``Bash(git *)``) works for Claude (corral's policy matches tool
  names only, so it asks for the rest). The ``=`` form keeps the flag from swallowing the next
  arguments (it is variadic).
* ``--resume=ID`` uses the ``=`` form so an id can never be parsed as a flag.

Secrets never reach argv: ``request.env`` goes to the environment only, and MCP servers (whose
env and headers may hold tokens) are written to a file in ``request.work_dir`` (mode 0600 via
``Launch.files``). The binary is ``options.binary``, else ``claude`` resolved on the child's
``PATH`` at spawn time, which keeps this function pure. ``options.home`` becomes
``CLAUDE_CONFIG_DIR``: an isolated config home (settings, sessions and credentials all live
there, so a fresh home is logged out unless the env carries a key).
"""

from __future__ import annotations

import json
import os
from typing import Any

from actors.harness import HarnessRequest, Launch
from actors.vendors.options import VendorOptions, configured_env, vendor_options
from protocol.errors import BadRequest
from protocol.models import McpServer, PermissionMode

__all__ = [
    "BASE_ARGS",
    "FIXED_ENV",
    "HOME_ENV",
    "MCP_CONFIG_FILE",
    "ClaudeOptions",
    "build_launch",
    "claude_options",
    "mcp_config",
    "permission_mode_flag",
]

BASE_ARGS: tuple[str, ...] = (
    "-p",
    "--input-format", "stream-json",
    "--output-format", "stream-json",
    "--verbose",
    "--include-partial-messages",
    "--replay-user-messages",
    "--permission-prompt-tool", "stdio",
)
"""The arguments every Claude child gets, in this order, right after the binary."""

FIXED_ENV = {"CLAUDECODE": ""}
"""Env every Claude child gets: an inherited ``CLAUDECODE`` makes the child believe it runs
inside another Claude Code."""

HOME_ENV = {"CLAUDE_CONFIG_DIR": ""}
"""Where ``options.home`` goes (``home_env``): Claude's config directory is the home itself."""

MCP_CONFIG_FILE = "claude-mcp.json"
"""The file name, inside ``request.work_dir``, that carries the MCP servers."""

_PERMISSION_MODES: dict[PermissionMode, str | None] = {
    "ask": "default",
    "auto_edit": "acceptEdits",
    "auto": "bypassPermissions",
    "inherit": None,
}


class ClaudeOptions(VendorOptions, frozen=True, kw_only=True):
    """``session.create`` options the Claude driver understands (others are ignored)."""

    strict_mcp: bool | None = None
    """Force ``--strict-mcp-config`` on or off; by default it is on exactly when servers are given."""


def claude_options(request: HarnessRequest) -> ClaudeOptions:
    """Decode the options this driver reads; a wrong type is a ``bad_request``."""
    return vendor_options(request, ClaudeOptions)


def permission_mode_flag(mode: PermissionMode) -> str | None:
    """The ``--permission-mode`` value for a corral policy mode (``None``: pass no flag)."""
    return _PERMISSION_MODES[mode]


def mcp_config(servers: list[McpServer]) -> dict[str, Any]:
    """The ``--mcp-config`` document: ``{"mcpServers": {name: stdio or http config}}``."""
    rendered: dict[str, Any] = {}
    for server in servers:
        if server.name in rendered:
            raise BadRequest(f"MCP server {server.name!r} is given twice")
        if server.command:
            cfg: dict[str, Any] = {"type": "stdio", "command": server.command, "args": list(server.args)}
            if server.env:
                cfg["env"] = dict(server.env)
        elif server.url:
            cfg = {"type": "http", "url": server.url}
            if server.headers:
                cfg["headers"] = dict(server.headers)
        else:
            raise BadRequest(f"MCP server {server.name!r} has neither a command nor a url")
        rendered[server.name] = cfg
    return {"mcpServers": rendered}


def build_launch(request: HarnessRequest) -> Launch:
    """The argv, env and files that start Claude Code for ``request``. Pure: no I/O."""
    options = claude_options(request)
    argv = [options.binary or "claude", *BASE_ARGS]
    mode = permission_mode_flag(request.permissions.mode)
    if mode is not None:
        argv += ["--permission-mode", mode]
    if request.permissions.allow_tools:
        argv.append(f"--allowedTools={','.join(request.permissions.allow_tools)}")
    if request.model:
        argv += ["--model", request.model]
    if request.resume:
        argv.append(f"--resume={request.resume}")
    if request.instructions:
        argv += ["--append-system-prompt", request.instructions]
    files: dict[str, str] = {}
    if request.mcp_servers:
        path = os.path.join(request.work_dir, MCP_CONFIG_FILE)
        files[path] = json.dumps(mcp_config(request.mcp_servers), indent=2) + "\n"
        argv += ["--mcp-config", path]
    strict = options.strict_mcp if options.strict_mcp is not None else bool(request.mcp_servers)
    if strict:
        argv.append("--strict-mcp-config")
    argv += options.extra_args
    env = configured_env(FIXED_ENV, request.env, options.home, HOME_ENV)
    return Launch(argv=argv, env=env, cwd=request.cwd, files=files)
