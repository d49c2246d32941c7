"""The pure launch builder of a shared ``opencode serve``, its fingerprint, and per-session data.

A session's request becomes the launch of the *server* it needs:
``[binary, "serve", "--hostname", "127.0.0.1", "--port", "0", *options.extra_args]`` in the
repository root of the session's cwd (the nearest directory above it holding ``.git``, else the
cwd), with ``env`` added to the daemon's environment and, when the session has MCP servers,
``OPENCODE_CONFIG_CONTENT`` carrying them (OpenCode merges it over its other config):
``{"mcp": {NAME: {"type": "local", "command": [cmd, *args], "environment": env} | {"type":
"remote", "url": URL, "headers": headers}}}``. ``options.home`` becomes ``XDG_CONFIG_HOME`` and
``XDG_DATA_HOME`` below it (``config``, ``data``): an isolated config, login and session store.
``options.config`` (an object) is merged into ``OPENCODE_CONFIG_CONTENT`` too (providers, …).

The **fingerprint** of a launch (``fingerprint``) is a hash of all of it: binary, arguments,
root, environment and config. Sessions whose launches have one fingerprint share one server.
What differs per session is not in the launch: the model (sent with each prompt), the permission
mode (a per-session ruleset, ``permission_rules``), the resume id, the session's own directory
(a ``directory`` query on every call). The server's password is made per run by the server
actor and is not part of the fingerprint either.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from actors.harness import HarnessRequest, Launch
from actors.vendors.options import VendorOptions, home_env, vendor_options
from protocol.errors import BadRequest
from protocol.models import McpServer, PermissionMode

__all__ = ["DEFAULT_BINARY", "HOME_ENV", "build_launch", "fingerprint", "permission_rules",
           "repository_root", "split_model"]

DEFAULT_BINARY = "opencode"

HOME_ENV = {"XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data"}
"""Where ``options.home`` goes (``home_env``): OpenCode's config and data directories under it."""


class OpenCodeOptions(VendorOptions, frozen=True, kw_only=True):
    """The shared vendor options plus ``config``: OpenCode configuration merged over its own."""

    config: dict[str, Any] = {}


def build_launch(request: HarnessRequest, *, default_binary: str = DEFAULT_BINARY) -> Launch:
    """The argv, env overrides and cwd of the server ``request`` needs."""
    options = vendor_options(request, OpenCodeOptions)
    if request.model:
        split_model(request.model)
    env = dict(request.env)
    content = {**options.config, **({"mcp": mcp_config(request.mcp_servers)} if request.mcp_servers else {})}
    if content:
        env["OPENCODE_CONFIG_CONTENT"] = json.dumps(content, sort_keys=True)
    env.update(home_env(options.home, HOME_ENV))
    argv = [options.binary or default_binary, "serve", "--hostname", "127.0.0.1", "--port", "0",
            *options.extra_args]
    return Launch(argv=argv, env=env, cwd=repository_root(request.cwd))


def fingerprint(launch: Launch) -> str:
    """The key under which sessions share a server: a hash of the whole launch."""
    blob = json.dumps([launch.argv, launch.cwd, sorted(launch.env.items())])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def permission_rules(mode: PermissionMode) -> list[dict[str, str]]:
    """The session's OpenCode ruleset: ``ask`` and ``auto_edit`` make edits and bash ask (the
    session's policy answers what it may), ``auto`` allows them, ``inherit`` adds nothing."""
    action = {"ask": "ask", "auto_edit": "ask", "auto": "allow"}.get(mode)
    if action is None:
        return []
    return [{"permission": name, "pattern": "*", "action": action} for name in ("edit", "bash")]


def split_model(model: str) -> tuple[str, str]:
    """``"provider/model"`` → ``("provider", "model")``; ``ValueError``-free: ``BadRequest``."""
    provider, slash, model_id = model.partition("/")
    if not slash or not provider or not model_id:
        raise BadRequest(f"opencode needs a model as provider/model, not {model!r}")
    return provider, model_id


def mcp_config(servers: list[McpServer]) -> dict[str, Any]:
    """OpenCode's ``mcp`` table for ``servers``."""
    table: dict[str, Any] = {}
    for server in servers:
        if server.name in table:
            raise BadRequest(f"MCP server {server.name!r} is listed twice")
        if (server.command is None) == (server.url is None):
            raise BadRequest(f"MCP server {server.name!r} needs exactly one of command or url")
        if server.command is not None:
            entry: dict[str, Any] = {"type": "local", "command": [server.command, *server.args]}
            if server.env:
                entry["environment"] = dict(server.env)
        else:
            entry = {"type": "remote", "url": server.url}
            if server.headers:
                entry["headers"] = dict(server.headers)
        table[server.name] = entry
    return table


def repository_root(cwd: str) -> str:
    """The nearest directory at or above ``cwd`` that holds ``.git``; ``cwd`` if none does."""
    path = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return os.path.abspath(cwd)
        path = parent

