"""The pure launch builder: a ``HarnessRequest`` in, the ``codex app-server`` argv and env out.

``argv`` is ``[binary, "app-server", -c overrides…, *options.extra_args]``; Codex takes ``-c``,
``--enable`` and ``--disable`` after the subcommand too, so extra args land where they work.

* ``options.binary`` picks the executable (else the driver's resolved binary, else ``codex``).
* ``model`` becomes ``-c model="…"`` (the translator also sends it in ``thread/start``).
* ``options.home`` becomes ``CODEX_HOME`` (an isolated config, login and session store).
* ``env`` is added to the parent environment and wins over it; ``CODEX_HOME`` from
  ``options.home`` wins over ``env``.
* MCP servers become ``-c mcp_servers.<name>.…`` overrides that never carry a secret: a stdio
  server's ``env`` is passed through the process env and named in ``env_vars``; an HTTP server's
  ``Authorization: Bearer …`` header goes through ``bearer_token_env_var`` and every other header
  through ``env_http_headers`` (header → env var name). Codex has one process env, so two servers
  (or a server and ``env``) that give one variable different values are refused.
* Instructions travel in ``thread/start`` (``developerInstructions``), not in argv.

Every mistake in the request raises ``protocol.errors.BadRequest`` whose message names keys only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from actors.harness import HarnessRequest, Launch
from actors.vendors.options import VendorOptions, home_env, vendor_options
from protocol.errors import BadRequest
from protocol.models import McpServer

DEFAULT_BINARY = "codex"
"""The executable looked up on ``PATH`` when neither the request nor detection names one."""

HOME_ENV = {"CODEX_HOME": ""}
"""Where ``options.home`` goes (``home_env``): ``CODEX_HOME`` is the home itself."""


def build_launch(request: HarnessRequest, *, default_binary: str = DEFAULT_BINARY) -> Launch:
    """The argv, env overrides and cwd that start ``codex app-server`` for ``request``."""
    options = vendor_options(request, VendorOptions)
    argv = [options.binary or default_binary, "app-server"]
    if request.model:
        argv += ["-c", f"model={toml_value(request.model)}"]
    argv += mcp_args(request.mcp_servers)
    argv += options.extra_args
    env = _merge_env(mcp_env(request.mcp_servers), request.env, "env")
    env.update(home_env(options.home, HOME_ENV))
    return Launch(argv=argv, env=env, cwd=request.cwd)


def mcp_args(servers: Iterable[McpServer]) -> list[str]:
    """The ``-c mcp_servers.<name>…`` overrides for ``servers``; secrets stay in ``mcp_env``."""
    argv: list[str] = []
    seen: set[str] = set()
    for server in servers:
        name = _server_name(server, seen)
        prefix = f"mcp_servers.{name}"
        if server.command is not None:
            argv += ["-c", f"{prefix}.command={toml_value(server.command)}"]
            if server.args:
                argv += ["-c", f"{prefix}.args={toml_value(server.args)}"]
            if server.env:
                argv += ["-c", f"{prefix}.env_vars={toml_value(sorted(server.env))}"]
            continue
        argv += ["-c", f"{prefix}.url={toml_value(server.url or '')}"]
        headers: dict[str, str] = {}
        for header, value in sorted(server.headers.items()):
            if _is_bearer(header, value):
                argv += ["-c", f"{prefix}.bearer_token_env_var={toml_value(_bearer_var(name))}"]
            else:
                headers[header] = _header_var(name, header)
        if headers:
            argv += ["-c", f"{prefix}.env_http_headers={toml_value(headers)}"]
    return argv


def mcp_env(servers: Iterable[McpServer]) -> dict[str, str]:
    """The env the codex process must carry for ``mcp_args``; refuses conflicting values."""
    env: dict[str, str] = {}
    seen: set[str] = set()
    for server in servers:
        name = _server_name(server, seen)
        if server.command is not None:
            env = _merge_env(env, server.env, f"mcp_servers.{name}.env")
            continue
        carried: dict[str, str] = {}
        for header, value in server.headers.items():
            if _is_bearer(header, value):
                carried[_bearer_var(name)] = value.split(None, 1)[1]
            else:
                carried[_header_var(name, header)] = value
        env = _merge_env(env, carried, f"mcp_servers.{name}.headers")
    return env


def toml_value(value: str | list[str] | dict[str, str]) -> str:
    """A string, string list or string table as a TOML value (JSON strings are TOML strings)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return "{ " + ", ".join(f"{toml_value(k)} = {toml_value(v)}" for k, v in value.items()) + " }"


_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def _server_name(server: McpServer, seen: set[str]) -> str:
    # Codex splits -c keys on dots, so a name must be a bare TOML key.
    if not _NAME.match(server.name):
        raise BadRequest(f"MCP server name {server.name!r} must match [A-Za-z0-9_-]+")
    if server.name in seen:
        raise BadRequest(f"MCP server {server.name!r} is listed twice")
    if (server.command is None) == (server.url is None):
        raise BadRequest(f"MCP server {server.name!r} needs exactly one of command or url")
    seen.add(server.name)
    return server.name


def _merge_env(base: dict[str, str], extra: dict[str, str], where: str) -> dict[str, str]:
    merged = dict(base)
    for key, value in extra.items():
        if key in merged and merged[key] != value:
            raise BadRequest(f"{where} gives {key} a value another MCP server or env already sets")
        merged[key] = value
    return merged


def _is_bearer(header: str, value: str) -> bool:
    parts = value.split(None, 1)
    return header.lower() == "authorization" and len(parts) == 2 and parts[0].lower() == "bearer"


def _env_part(text: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", text.upper())


def _bearer_var(name: str) -> str:
    return f"CORRAL_MCP_{_env_part(name)}_BEARER_TOKEN"


def _header_var(name: str, header: str) -> str:
    return f"CORRAL_MCP_{_env_part(name)}_HEADER_{_env_part(header)}"

