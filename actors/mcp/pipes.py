"""MCP over the pipes of a process child of ours: the SDK's ``Transport`` shape on a ``ProcessChild``.

The SDK's own stdio client spawns the server itself; ours must be spawned by
``supervisor.proc.open_child`` so that it has a ledger row, its own process group, the bounded
close sequence and no orphans after a daemon SIGKILL. This module only translates: stdout
frames (newline-delimited JSON, split and bounded by the child's framer) become
``SessionMessage``s on the read stream, and messages written to the write stream become lines
on the child's stdin. A line that is not JSON-RPC reaches the session as an ``Exception`` item
(the SDK's convention) and the stream goes on; the end of stdout ends the read stream, which
fails every request still waiting.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import mcp_types
import trio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from protocol.errors import CorralError
from supervisor.proc import ProcessChild

__all__ = ["child_transport"]

log = logging.getLogger("corral.mcp")

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


@asynccontextmanager
async def child_transport(child: ProcessChild) -> AsyncIterator[Streams]:
    """Yield the (read, write) stream pair of an MCP session over ``child``'s stdin and stdout.

    Leaving the block stops both pumps; it does not close the child (its owner does).
    """
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pump_stdout, child, read_in)
        nursery.start_soon(_pump_stdin, child, write_out)
        try:
            yield read_out, write_in
        finally:
            nursery.cancel_scope.cancel()
            for stream in (read_in, read_out, write_in, write_out):
                stream.close()


async def _pump_stdout(child: ProcessChild, out: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    async with out:
        try:
            async for frame in child.frames():
                try:
                    item: SessionMessage | Exception = SessionMessage(
                        mcp_types.jsonrpc_message_adapter.validate_json(frame, by_name=False))
                except ValueError as exc:
                    log.warning("MCP server %s wrote a line that is not JSON-RPC", child.key)
                    item = exc
                await out.send(item)
        except CorralError as exc:  # a torn or over-long frame: the server is closed by its owner
            log.warning("MCP server %s broke its framing: %s", child.key, exc)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session is gone


async def _pump_stdin(child: ProcessChild, source: MemoryObjectReceiveStream[SessionMessage]) -> None:
    async with source:
        try:
            async for message in source:
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await child.send(line.encode() + b"\n")
        except CorralError:
            pass  # the child no longer reads: its exit ends the read side
