"""The launch builder: a ``HarnessRequest`` and a profile in, the agent's argv and env out.

``argv`` is ``[binary, *profile.args, *mode_args, (profile.model_arg, model)?,
*options.extra_args]`` (``mode_args``: the profile's arguments for the permission mode).

* ``options.binary`` picks the executable (else the detected one, else ``profile.binary``).
* ``model`` goes on the command line when the profile has a flag for it; otherwise the
  translator sends ``session/set_model`` once the session is open.
* ``env``: the profile's fixed env, then its ``mode_env`` for the session's permission mode,
  then the session's ``env`` (keys and base URLs reach the
  agent this way), then ``options.home`` in each of ``profile.home_env`` (the agent's config home).
* MCP servers travel in ``session/new`` in ACP's shape (``mcp_servers``), never in argv or env.
* ``wait`` seconds (the ``load_next_minute`` quirk, computed by the driver) wrap the command as
  ``/bin/sh -c 'sleep "$0" && exec "$@"' WAIT argv…``: the pid stays the agent's, and the
  handshake the translator writes waits in the pipe.

Mistakes in the request raise ``protocol.errors.BadRequest`` naming keys only.
"""

from __future__ import annotations

from typing import Any

from actors.harness import HarnessRequest, Launch
from actors.vendors.options import VendorOptions, configured_env, vendor_options
from protocol.errors import BadRequest
from protocol.models import McpServer

from .profiles import Profile

__all__ = ["build_launch", "mcp_servers", "minute_wait"]


class AcpOptions(VendorOptions, frozen=True, kw_only=True):
    """The shared vendor options plus ``auth_method`` (an ``authenticate`` method id)."""

    auth_method: str | None = None


def build_launch(request: HarnessRequest, profile: Profile, *, default_binary: str | None = None,
                 wait: float = 0.0) -> Launch:
    """The argv, env overrides and cwd that start ``profile``'s agent for ``request``."""
    options = vendor_options(request, AcpOptions)
    argv = [options.binary or default_binary or profile.binary, *profile.args,
            *profile.mode_args.get(request.permissions.mode, ())]
    if request.model and profile.model_arg is not None:
        argv += [profile.model_arg, request.model]
    argv += options.extra_args
    if wait > 0:
        argv = ["/bin/sh", "-c", 'sleep "$0" && exec "$@"', f"{wait:.1f}", *argv]
    mode_env = profile.mode_env.get(request.permissions.mode, {})
    env = configured_env({**profile.env, **mode_env}, request.env, options.home, profile.home_env)
    mcp_servers(request.mcp_servers)  # refuse a bad server list before the spawn
    return Launch(argv=argv, env=env, cwd=request.cwd)


def mcp_servers(servers: list[McpServer]) -> list[dict[str, Any]]:
    """``servers`` in ACP's shape: env and headers as lists of ``{name, value}``."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for server in servers:
        if server.name in seen:
            raise BadRequest(f"MCP server {server.name!r} is listed twice")
        seen.add(server.name)
        if (server.command is None) == (server.url is None):
            raise BadRequest(f"MCP server {server.name!r} needs exactly one of command or url")
        if server.command is not None:
            out.append({"name": server.name, "command": server.command, "args": server.args,
                        "env": [{"name": k, "value": v} for k, v in server.env.items()]})
        else:
            out.append({"type": "http", "name": server.name, "url": server.url,
                        "headers": [{"name": k, "value": v} for k, v in server.headers.items()]})
    return out


def minute_wait(now: float, opened_at: float | None, launched_at: float | None) -> float:
    """Seconds to wait before a resumed agent with ``load_next_minute`` may open its session.

    ``opened_at``/``launched_at`` are the wall-clock times the previous child of this session
    opened it and was launched (``None``: not known, e.g. after a daemon restart). The new child
    must open the session in a later UTC minute than the previous one did: when that moment is
    known, wait for the minute after it; when it is not (or the previous child never got there),
    wait for the next minute. One second of margin on either side of the boundary.
    """
    known = opened_at is not None and (launched_at is None or opened_at >= launched_at)
    boundary = ((opened_at if known and opened_at is not None else now) // 60 + 1) * 60 + 1
    return max(0.0, boundary - now)

