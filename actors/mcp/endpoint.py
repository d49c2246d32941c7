"""The shared endpoint: every supervised MCP server on one loopback streamable-HTTP listener.

Vendor CLIs (Claude Code, Codex, …) would each spawn their own copy of every stdio MCP server;
instead the daemon injects, per session, one URL per server, ``http://127.0.0.1:PORT/mcp/NAME``
with ``Authorization: Bearer <the session's token>``, and serves them here: an ``mcp`` SDK
low-level ``Server`` whose handlers proxy to the MCP actors, so every session's calls reach the
one shared process. The CLI sees the server under the session's own name (``mcp__NAME__TOOL``).

Each HTTP request passes, in order: the Host and Origin checks of the websocket (``refuse``,
given by the composition root: a non-loopback Host or a foreign Origin is 403), the bearer
token (401 unless it is a live session's), and the path (404 unless NAME is one of that
session's servers). The request's scope then carries the binding and the server name to the
handlers. It is served with hypercorn on trio, on 127.0.0.1 and an ephemeral port.

The endpoint is a root child from the daemon's start, but it listens only once a session needs
it (``url``, awaited by ``harness_servers`` for a session with servers to reach): the SDK and
hypercorn take a second to import, which a daemon whose sessions never use MCP should not pay,
so they load then, in a worker thread. Once wanted it stays wanted: a restarted endpoint
listens again at once (on a new port; sessions made later get the new URL).

A failure of the server behind a call (``mcp.server_failed``, a crash, a timeout) is a tool
result with ``isError`` and the code in its text, so the model sees it; the tool stays listed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from actors.mcp.binding import SessionMcp
from actors.mcp.registry import McpRegistry
from protocol.errors import ActorGone, CorralError
from supervisor.asgi import lifespan, plain
from supervisor.threadimport import load

if TYPE_CHECKING:  # loaded when the endpoint is first wanted (``run``)
    import mcp_types
    from mcp.server import Server
    from mcp.server.context import ServerRequestContext

__all__ = ["McpEndpoint", "Refuse"]

log = logging.getLogger("corral.mcp.endpoint")

_HTTP_LOG = logging.getLogger("corral.mcp.endpoint.http")
"""hypercorn's error log. Its only INFO line is "Running on http://…", a second address line
next to the daemon's own "listening on" line (and not the daemon's address): warnings and up."""
_HTTP_LOG.setLevel(logging.WARNING)

Refuse = Callable[[int, str, Sequence[tuple[bytes, bytes]]], "str | None"]
"""``refuse(port, host, headers)``: why a request to the endpoint listening on ``port`` must be
refused (its Host or Origin), or ``None``."""

_SDK = ("hypercorn.trio", "mcp.server.streamable_http_manager")
"""What the endpoint imports (off the event loop) when it is first wanted."""

_PREFIX = "/mcp/"
_SCOPE_KEY = "corral.mcp"


KEEP_ALIVE = 600.0
"""Seconds an idle client connection stays open (one per session that uses the endpoint)."""


class McpEndpoint:
    """The loopback streamable-HTTP server that proxies to the MCP actors."""

    def __init__(self, registry: McpRegistry, refuse: Refuse, *, host: str = "127.0.0.1") -> None:
        self.registry = registry
        self.refuse = refuse
        self.host = host
        self.url: str | None = None
        self.port = 0
        self.server: Server[Any] | None = None
        self._manager: Any = None
        self._wanted = trio.Event()
        self._listening = trio.Event()
        registry.endpoint = self

    async def wanted_url(self, timeout: float) -> str:
        """The base URL, once the endpoint listens: the first call starts it. ``ActorGone``
        if it does not listen within ``timeout`` seconds (it is not running)."""
        self._wanted.set()
        with trio.move_on_after(timeout):
            await self._listening.wait()
        if self.url is None:
            raise ActorGone("the shared MCP endpoint is not running")
        return self.url

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Ready at once; from the first ``wanted_url`` on, listen and serve until cancelled."""
        task_status.started()
        await self._wanted.wait()
        for heavy in _SDK:
            await load(heavy)
        from hypercorn.config import Config as HypercornConfig  # loaded just above
        from hypercorn.trio import serve
        from mcp.server import Server
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

        self.server = Server("corral", version="1", on_list_tools=self._list_tools,
                             on_call_tool=self._call_tool)
        self._manager = StreamableHTTPSessionManager(app=self.server, json_response=True)
        config = HypercornConfig()
        config.bind = [f"{self.host}:0"]
        config.accesslog = None
        config.errorlog = _HTTP_LOG  # hypercorn takes a logger
        config.graceful_timeout = 1.0
        # An idle connection is kept far longer than a client keeps it in its pool: hypercorn's
        # 5 s closed pooled connections under the CLIs (Claude Code's fetch then failed its next
        # tool call with "the socket connection was closed unexpectedly").
        config.keep_alive_timeout = KEEP_ALIVE
        try:
            async with self._manager.run(), trio.open_nursery() as nursery:
                binds: list[str] = await nursery.start(partial(serve, self._asgi, config))  # type: ignore[arg-type]
                self.url = binds[0] + "/mcp"
                self.port = int(binds[0].rsplit(":", 1)[1])
                self.registry.endpoint_url = self.url
                self._listening.set()
                await trio.sleep_forever()
        finally:
            self.registry.endpoint_url = self.url = None
            self._listening = trio.Event()

    # --- ASGI -------------------------------------------------------------------------------

    async def _asgi(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers", []))
        fields = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers}
        reason = self.refuse(self.port, fields.get("host", ""), headers)
        if reason is not None:
            await plain(send, 403, reason)
            return
        binding = self._authorized(fields.get("authorization", ""))
        if binding is None:
            await plain(send, 401, "a session bearer token is required")
            return
        path: str = scope.get("path", "")
        name = path[len(_PREFIX):].rstrip("/") if path.startswith(_PREFIX) else ""
        if name not in binding.routes:
            await plain(send, 404, f"this session has no MCP server {name!r}")
            return
        await self._manager.handle_request({**scope, _SCOPE_KEY: (binding, name)}, receive, send)

    def _authorized(self, header: str) -> SessionMcp | None:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        return self.registry.by_token(token.strip())

    # --- MCP handlers -------------------------------------------------------------------------

    async def _list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> mcp_types.ListToolsResult:
        import mcp_types  # loaded by ``run`` before it serves

        binding, name = _route(ctx)
        tools = await binding.tools([name])
        return mcp_types.ListToolsResult(tools=[
            mcp_types.Tool(name=t.tool, title=t.title, description=t.description, input_schema=t.input_schema,
                           output_schema=t.output_schema)
            for t in tools
        ])

    async def _call_tool(self, ctx: ServerRequestContext[Any],
                         params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        import mcp_types  # loaded by ``run`` before it serves

        binding, name = _route(ctx)
        try:
            outcome = await binding.call(name, params.name, dict(params.arguments or {}))
        except CorralError as exc:
            return mcp_types.CallToolResult(
                content=[mcp_types.TextContent(type="text", text=f"[{exc.code.value}] {exc.message}")],
                is_error=True)
        return mcp_types.CallToolResult.model_validate(
            {"content": outcome.content, "isError": outcome.is_error,
             **({"structuredContent": outcome.structured} if outcome.structured is not None else {})})


def _route(ctx: ServerRequestContext[Any]) -> tuple[SessionMcp, str]:
    request = ctx.request
    scope: Mapping[str, Any] = getattr(request, "scope", {}) or {}
    route = scope.get(_SCOPE_KEY)
    if route is None:  # only reachable through _asgi, which always sets it
        raise RuntimeError("an MCP request reached the endpoint without its route")
    return route  # type: ignore[no-any-return]

