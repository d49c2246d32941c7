"""The reference path of ``bench_stream``: the least a trio + trio-websocket daemon does per event.

Run by the benchmark as ``python -m tests.bench.stream_relay SCRIPT``: prints its port, serves
one websocket client; each message from it becomes a line on the stdin of a child running
``SCRIPT``, and each line the child writes goes to the client wrapped as an event frame.
"""

from __future__ import annotations

import json
import subprocess
import sys

import trio
import trio_websocket
from trio_websocket import ConnectionClosed, WebSocketRequest, serve_websocket


async def main(script: str) -> None:
    child = await trio.lowlevel.open_process([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    async def serve(request: WebSocketRequest) -> None:
        ws = await request.accept()
        try:
            await relay(ws)
        except* ConnectionClosed:
            pass  # the benchmark is done with us

    async def relay(ws: trio_websocket.WebSocketConnection) -> None:
        async with trio.open_nursery() as nursery:
            async def forward() -> None:
                buffer, seq = b"", 0
                while chunk := await stdout.receive_some(65536):
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        seq += 1
                        await ws.send_message(json.dumps({"type": "event", "session_id": "s", "seq": seq,
                                                          "event": json.loads(line)}))
            nursery.start_soon(forward)
            while True:
                await ws.get_message()
                await stdin.send_all(b"go\n")

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, serve, "127.0.0.1", 0, None)
        print(server.port, flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
