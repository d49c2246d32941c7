"""The reference path of ``bench_stream`` and ``bench_latency``: the least a trio + trio-websocket
daemon does per event.

Run by the benchmarks as ``python -m tests.bench.stream_relay SCRIPT [SESSIONS]``: starts
``SESSIONS`` (default 1) children running ``SCRIPT``, prints its port and serves websocket
clients; a client on path ``/K`` follows child ``K`` (``/``: child 0). Each message from a client
becomes a line on the stdin of its child, and each line a child writes goes to every client
following it, wrapped as an event frame, with trio-websocket's ``send_message``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import trio
import trio_websocket
from trio_websocket import ConnectionClosed, WebSocketRequest, serve_websocket


class _Child:
    """One child and the clients following it."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.stdin = process.stdin
        self.stdout = process.stdout
        self.clients: list[trio_websocket.WebSocketConnection] = []

    async def forward(self) -> None:
        buffer, seq = b"", 0
        while chunk := await self.stdout.receive_some(65536):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                seq += 1
                frame = json.dumps({"type": "event", "session_id": "s", "seq": seq,
                                    "event": json.loads(line)})
                for ws in list(self.clients):
                    try:
                        await ws.send_message(frame)
                    except ConnectionClosed:
                        self.clients.remove(ws)


async def main(script: str, sessions: int) -> None:
    # Each child leads a session of its own, as the daemon starts its children (the scheduler's
    # autogroups then weigh them as they weigh the daemon's).
    children = [_Child(await trio.lowlevel.open_process([sys.executable, "-c", script],
                                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                        start_new_session=True))
                for _ in range(sessions)]

    async def serve(request: WebSocketRequest) -> None:
        child = children[int(request.path.strip("/") or 0)]
        ws = await request.accept()
        child.clients.append(ws)
        try:
            while True:
                await ws.get_message()
                await child.stdin.send_all(b"go\n")
        except ConnectionClosed:
            pass  # the benchmark is done with us

    async with trio.open_nursery() as nursery:
        for child in children:
            nursery.start_soon(child.forward)
        server = await nursery.start(serve_websocket, serve, "127.0.0.1", 0, None)
        print(server.port, flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1)
