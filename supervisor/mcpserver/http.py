"""The MCP server the daemon serves at ``/mcp``: streamable HTTP on a loopback port of its own.

The listener splices ``/mcp`` connections of the daemon's port to it (``front``). Each request
passes, in order: the websocket gate's Host and Origin rules for the daemon's port (``403``),
``Authorization: Bearer <the daemon's token>`` (compared in constant time; ``401``), and the path
(``404`` unless ``/mcp``). The tools are those of ``corral mcp-server``, run inside the daemon as
clients of it over its own Unix socket (``server.build_server``): a call is then exactly what a
call of the stdio server is, with no second code path into the application.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from supervisor.asgi import lifespan, plain
from supervisor.client import open_client
from supervisor.mcpserver.server import build_server
from supervisor.server.gate import Gate, header

__all__ = ["PATH", "serve"]

log = logging.getLogger("corral.mcpserver.http")

PATH = "/mcp"
KEEP_ALIVE = 600.0
"""Seconds an idle client connection stays open."""


async def serve(state_root: Path, token: str, daemon_port: int, extra_origins: Sequence[str], *,
                task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve on 127.0.0.1 (an ephemeral port, given to ``task_status``) until cancelled."""
    server = build_server(lambda name: open_client(state_root, name=name))
    manager = StreamableHTTPSessionManager(app=server)
    gate = Gate(daemon_port, extra_origins)
    expected = f"Bearer {token}".encode()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers", []))
        refusal = gate.foreign(header(headers, b"host") or "", headers, unix=False)
        if refusal is not None:
            await plain(send, 403, f"forbidden: {refusal}\n")
        elif not hmac.compare_digest((header(headers, b"authorization") or "").encode(), expected):
            await plain(send, 401, "the daemon's bearer token is required (Authorization: Bearer …)\n")
        elif scope.get("path") != PATH:
            await plain(send, 404, f"not found; the MCP server is at {PATH}\n")
        else:
            await manager.handle_request(scope, receive, send)

    config = HypercornConfig()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.errorlog = log
    config.graceful_timeout = 1.0
    config.keep_alive_timeout = KEEP_ALIVE
    async with manager.run(), trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(partial(hypercorn_serve, app, config))  # type: ignore[arg-type]
        task_status.started(int(binds[0].rsplit(":", 1)[1]))
