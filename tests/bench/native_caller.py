"""A stand-in native worker for ``bench_mcp_call``: the real worker's stdio and ``DaemonLink``,
without ADK and a model.

Like ``actors.native.worker.main``, it reads length-prefixed ``protocol.native`` commands on
stdin with asyncio and writes its frames on stdout, and its asks go through the worker's own
``DaemonLink`` (answers handed to it by the stdin loop, as ``Worker.handle`` does). Each
``prompt`` command is one MCP call: ``CallMcpTool(name=<prompt text>, arguments={"text":
"bench"})`` through the link, timed with ``perf_counter`` from the ask to its answer in the
link (what ``McpTool.run_async`` awaits in a real worker), then reported as a completed ``tool``
event whose ``output`` is ``{"seconds": …, "text": …, "is_error": …}``.

Run by the benchmark as ``python -m tests.bench.native_caller``; not collected by pytest.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from actors.native.worker.link import DaemonLink
from protocol.events import Event, Tool
from protocol.framing import DEFAULT_LIMIT, LengthPrefixFramer
from protocol.native import Ask, CallMcpTool, McpResult, McpTools, Prompt, Shutdown, decode_command, encode_event

_READ_SIZE = 1 << 16
_TIMEOUT = 60.0


async def _serve() -> int:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_READ_SIZE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                 os.fdopen(0, "rb", buffering=0))
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(1, "wb", buffering=0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    framer = LengthPrefixFramer(DEFAULT_LIMIT)

    def emit(event: Event | Ask) -> None:
        writer.write(framer.encode(encode_event(event)))

    link = DaemonLink(emit)
    calls: set[asyncio.Task[None]] = set()

    async def one_call(number: int, name: str) -> None:
        start = time.perf_counter()
        result = await link.ask(lambda i: CallMcpTool(id=i, name=name, arguments={"text": "bench"}),
                                McpResult, _TIMEOUT)
        seconds = time.perf_counter() - start
        emit(Tool(call_id=str(number), name=name, kind="mcp", phase="completed",
                  output={"seconds": seconds, "text": result.text, "is_error": result.is_error}))

    number = 0
    while True:
        data = await reader.read(_READ_SIZE)
        if not data:
            break
        framer.receive_data(data)
        for frame in framer.frames():
            match decode_command(frame):
                case McpResult() | McpTools() as answer:
                    link.answer(answer)
                case Prompt(text=name):
                    number += 1
                    task = asyncio.create_task(one_call(number, name))
                    calls.add(task)
                    task.add_done_callback(calls.discard)
                case Shutdown():
                    link.close()
                    return 0
        await writer.drain()
    link.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(_serve()))
