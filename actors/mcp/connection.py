"""One connection to an MCP server: the process or HTTP session under an SDK ``Client``.

``connect`` opens it (spawns a stdio server as a process child of ours, or opens an HTTP client
with the definition's headers) and yields a ``Connection``; leaving the block closes the
client, then the process (its bounded close sequence: stdin closed, SIGTERM, SIGKILL to the
group; the ledger row goes with it). The ``Connection`` records why it was lost and cancels the
calls that were in flight on it, so no caller waits on a dead server.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Protocol

import httpx2
import mcp_types
import trio
from mcp import Client
from mcp.client.session import MessageHandlerFnT
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from actors.mcp.config import Definition
from actors.mcp.pipes import child_transport
from supervisor import __version__
from supervisor.ledger import Ledger
from protocol.errors import McpStartFailed
from supervisor.proc import ExitStatus, ProcessChild, ProcessSpec, open_child

__all__ = ["Connection", "Connector", "connect", "describe_exit"]

# What a stdio server inherits from the daemon's environment (as the SDK's own stdio client
# does): enough to find programs and a home, never the daemon's other variables and secrets.
_INHERITED = frozenset({"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR"})
_CLOSE_GRACE = 5.0  # seconds for a stdio server's close sequence
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


class Connection:
    """A live MCP session: ``client`` to send requests on, ``child`` for a stdio server."""

    def __init__(self, client: Client, child: ProcessChild | None) -> None:
        self.client = client
        self.child = child
        self.lost = trio.Event()
        self.reason: str | None = None
        self._calls: set[trio.CancelScope] = set()

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    @property
    def modern(self) -> bool:
        """Whether the 2026-07-28 era was negotiated (``subscriptions/listen``, no initialize)."""
        return self.client.protocol_version in MODERN_PROTOCOL_VERSIONS

    def lose(self, reason: str) -> None:
        """Mark the connection lost (first reason wins) and cancel every call in flight on it."""
        if self.lost.is_set():
            return
        self.reason = reason
        self.lost.set()
        for scope in self._calls:
            scope.cancel()

    def track(self, scope: trio.CancelScope) -> None:
        """Cancel ``scope`` when the connection is lost (at once if it already is)."""
        if self.lost.is_set():
            scope.cancel()
        self._calls.add(scope)

    def untrack(self, scope: trio.CancelScope) -> None:
        self._calls.discard(scope)


class Connector(Protocol):
    """``connect``'s shape: opens a connection to a definition, as an async context manager."""

    def __call__(self, definition: Definition, *, ledger: Ledger | None, frame_limit: int,
                 stderr_lines: int, message_handler: MessageHandlerFnT,
                 mode: str = "auto") -> AbstractAsyncContextManager[Connection]: ...


@asynccontextmanager
async def connect(definition: Definition, *, ledger: Ledger | None, frame_limit: int,
                  stderr_lines: int, message_handler: MessageHandlerFnT,
                  mode: str = "auto") -> AsyncIterator[Connection]:
    """Open a connection to ``definition`` and finish the MCP handshake, then yield it.

    Raises ``LaunchFailed`` if the command cannot start, the SDK's ``MCPError`` or a transport
    error if the handshake fails. Not bounded in time here: the caller applies its
    ``startup_timeout``. Cancellation at any point closes whatever was opened.
    """
    async with AsyncExitStack() as stack:
        child: ProcessChild | None = None
        transport: Any
        if definition.transport == "stdio":
            child = await stack.enter_async_context(open_child(_spec(definition, frame_limit, stderr_lines),
                                                               ledger=ledger))
            transport = child_transport(child)
        else:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=dict(definition.headers), timeout=_HTTP_TIMEOUT))
            transport = streamable_http_client(definition.url or "", http_client=http)
        client = Client(transport, mode=mode, cache=None, message_handler=message_handler,
                        client_info=mcp_types.Implementation(name="corral", version=__version__))
        try:
            await stack.enter_async_context(client)
        except Exception as exc:
            if child is not None:  # name the exit of a server that died during the handshake
                with trio.move_on_after(1.0):
                    status = await child.wait()
                    raise McpStartFailed(f"{describe_exit(status)} during the handshake") from exc
            raise
        yield Connection(client, child)


def describe_exit(status: ExitStatus) -> str:
    """A server process's end in words, for ``last_error``."""
    if status.signal:
        return f"the process was killed by {status.signal}"
    return f"the process exited with status {status.exit_code}"


def _spec(definition: Definition, frame_limit: int, stderr_lines: int) -> ProcessSpec:
    env: dict[str, str | None] = {name: None for name in os.environ if name not in _INHERITED}
    env.update(definition.env)
    return ProcessSpec(
        key=f"mcp:{definition.name}", kind="mcp", argv=[definition.command or "", *definition.args],
        cwd=definition.cwd, env=env, shutdown=_CLOSE_GRACE, framing="ndjson",
        frame_limit=frame_limit, stderr_lines=stderr_lines,
        secrets=frozenset(definition.env.values()),
    )
