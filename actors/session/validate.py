"""The checks ``session.create`` makes before anything exists, so a bad value is the caller's
``bad_request`` (naming the field in its message and in ``data.field``), never a session that
dies later of it: a NUL cannot reach an argv, an environment or a path; an environment name
cannot be empty or hold ``=``; ``cwd`` must be an absolute path to a directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from protocol.errors import BadRequest
from protocol.messages import SessionCreate

from supervisor.placement.policy import wanted_node

__all__ = ["check_create"]


def check_create(request: SessionCreate) -> None:
    """Raise ``BadRequest`` for the first field of ``request`` a harness child could not take."""
    _check_cwd(request.cwd)
    _text("model", request.model)
    _env("env", request.env or {})
    for n, server in enumerate(request.mcp_servers or []):
        field = f"mcp_servers[{n}]"
        for name in ("name", "command", "url"):
            _text(f"{field}.{name}", getattr(server, name))
        for k, arg in enumerate(server.args):
            _text(f"{field}.args[{k}]", arg)
        _env(f"{field}.env", server.env)
        for header, value in server.headers.items():
            _text(f"{field}.headers", header)
            _text(f"{field}.headers.{header}", value)
    _walk("options", request.options or {})
    wanted_node(request.options)  # options.placement's shape (which node: the backend's call)


def _check_cwd(cwd: str) -> None:
    _text("cwd", cwd)
    if not cwd or not os.path.isabs(cwd):
        raise _bad("cwd", f"cwd must be an absolute path, not {cwd!r}")
    if not os.path.isdir(cwd):
        raise _bad("cwd", f"cwd {cwd!r} is not a directory")


def _env(field: str, env: Mapping[str, str]) -> None:
    for name, value in env.items():
        if not name or "=" in name or "\0" in name:
            raise _bad(field, f"{field} has a bad variable name {name!r} (empty, or with '=' or NUL)")
        _text(f"{field}.{name}", value)


def _text(field: str, value: str | None) -> None:
    if value is not None and "\0" in value:
        raise _bad(field, f"{field} must not contain a NUL character")


def _walk(field: str, value: Any) -> None:
    """Every string inside an ``options`` value (options reach argvs, files and environments)."""
    if isinstance(value, str):
        _text(field, value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _text(field, str(key))
            _walk(f"{field}.{key}", item)
    elif isinstance(value, list):
        for n, item in enumerate(value):
            _walk(f"{field}[{n}]", item)


def _bad(field: str, message: str) -> BadRequest:
    return BadRequest(message, data={"field": field})
