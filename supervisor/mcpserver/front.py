"""The daemon's ``/mcp``: the listener hands each such stream here, and it is spliced, byte for
byte, to the MCP server of ``http`` on a loopback port of its own.

That server (the ``mcp`` SDK and hypercorn: a second of imports) starts on the first ``/mcp``
request, not with the daemon: ``run`` is a supervised child that waits until a stream wants it,
imports ``supervisor.mcpserver.http`` in a worker thread, and serves. Every check (the Host and
Origin of the websocket gate, the daemon's bearer token) is made by that server on every request,
since a kept-alive connection carries more requests than the first one the listener saw.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import trio

__all__ = ["McpFront"]

log = logging.getLogger("corral.mcpserver")

START_TIMEOUT = 60.0
"""Seconds a ``/mcp`` stream waits for the server to start (the first one imports the SDK)."""
_CHUNK = 65536
_UNAVAILABLE = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
                b"content-length: 32\r\nconnection: close\r\n\r\nthe MCP server is not available\n")


class McpFront:
    """The lazily started MCP server behind ``/mcp`` and the splice to it."""

    def __init__(self, state_root: Path, daemon_port: Callable[[], int], *,
                 extra_origins: Sequence[str] = ()) -> None:
        self.state_root = state_root
        self.daemon_port = daemon_port
        """The daemon's own port (its Origin rules), known once the daemon is bound."""
        self.extra_origins = tuple(extra_origins)
        self.port: int | None = None
        """The server's loopback port, once it serves."""
        self._wanted = trio.Event()
        self._ready = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve (once a stream wants it) until cancelled; ready at once (it starts lazily)."""
        task_status.started()
        await self._wanted.wait()
        http = await trio.to_thread.run_sync(importlib.import_module, "supervisor.mcpserver.http")
        token = await trio.to_thread.run_sync(lambda: (self.state_root / "token").read_text().strip())
        try:
            async with trio.open_nursery() as nursery:
                self.port = await nursery.start(http.serve, self.state_root, token, self.daemon_port(),
                                                self.extra_origins)
                self._ready.set()
        finally:
            self.port = None
            self._ready = trio.Event()

    async def splice(self, stream: trio.abc.Stream, received: bytes) -> None:
        """Carry one ``/mcp`` connection (``received``: what the listener read of it already) to
        the server, both ways, until either side closes; ``503`` when it does not start in time."""
        self._wanted.set()
        with trio.move_on_after(START_TIMEOUT):
            await self._ready.wait()
        port = self.port
        if port is None:
            await stream.send_all(_UNAVAILABLE)
            return
        try:
            inner = await trio.open_tcp_stream("127.0.0.1", port)
        except OSError:
            await stream.send_all(_UNAVAILABLE)
            return
        async with inner, trio.open_nursery() as nursery:
            await inner.send_all(received)
            nursery.start_soon(_pump, stream, inner, nursery.cancel_scope)
            nursery.start_soon(_pump, inner, stream, nursery.cancel_scope)


async def _pump(source: trio.abc.Stream, sink: trio.abc.Stream, done: trio.CancelScope) -> None:
    """Copy ``source`` to ``sink``; either side closing ends the splice (both directions)."""
    try:
        while data := await source.receive_some(_CHUNK):
            await sink.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        done.cancel()
