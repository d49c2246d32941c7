"""What a daemon adds to each streamed event: a child that writes its events one at a time (as a
vendor CLI streams an answer) and a websocket client that reads them, with corral in between,
next to a bare relay measured in the same run.

Run: ``python -m tests.bench.bench_stream [--events N] [--gap SECONDS] [--rounds R]``. Not
collected by pytest. Everything stays on 127.0.0.1.

The child writes ``--events`` fake-harness ``assistant`` deltas ``--gap`` seconds apart, each
carrying the wall-clock time it was written; the client notes when each arrives. Two paths:

* **corral**: a ``corral daemon`` process with a ``fake`` session running that child, and a
  client subscribed to it over TCP, as any client is;
* **relay**: the floor of any daemon on trio and trio-websocket: a process that spawns the same
  child, reads its stdout with ``trio.lowlevel.FdStream`` and sends each line, wrapped as an
  event frame, to its one websocket client. No log, no session, no permission, no fan-out.

The paths take turns, round by round. Reported per path: the event latency (written by the
child to read by the client: median and p90, ms) and the serving process's CPU per event (µs,
from ``/proc/<pid>/task/*/schedstat``: exact, unlike the tick-sampled ``cpu_times``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import trio
from trio_websocket import WebSocketConnection, open_websocket_url

from tests.bench.turns import cpu_ns
from tests.e2e.daemonproc import start_daemon, stop_daemon


def child_script(events: int, gap: float) -> str:
    """Python source of the streaming child: per line on stdin, ``events`` deltas and a result."""
    return (
        "import json, sys, time\n"
        "for _ in sys.stdin:\n"
        f"    for _ in range({events}):\n"
        "        sys.stdout.write(json.dumps({'type': 'assistant', 'delta': True,\n"
        "                                     'text': repr(time.time())}) + '\\n')\n"
        "        sys.stdout.flush()\n"
        f"        time.sleep({gap})\n"
        "    sys.stdout.write(json.dumps({'type': 'result', 'stop_reason': 'end_turn',\n"
        "                                 'is_error': False}) + '\\n')\n"
        "    sys.stdout.flush()\n"
    )


class Route:
    """One path: a serving process, a connected client, and what a round measured."""

    def __init__(self, name: str, pid: int, ws: WebSocketConnection, prompt: Any) -> None:
        self.name = name
        self.pid = pid
        self.ws = ws
        self.prompt = prompt
        self.latencies: list[float] = []
        self.cpu: list[float] = []

    async def round(self, events: int) -> None:
        """Prompt once; read every delta (noting its latency) up to the result."""
        before = cpu_ns(self.pid)
        await self.prompt()
        seen = 0
        while True:
            frame = json.loads(await self.ws.get_message())
            arrived = time.time()
            event = frame.get("event") if frame.get("type") == "event" else None
            if event is None:
                continue
            if event["type"] == "assistant":
                self.latencies.append((arrived - float(event["text"])) * 1000)
                seen += 1
            elif event["type"] == "result":
                break
        if seen != events:
            raise RuntimeError(f"{self.name}: {seen} deltas, {events} written")
        self.cpu.append((cpu_ns(self.pid) - before) / events / 1000)


async def corral_route(stack: AsyncExitStack, state: Path, cwd: str, script: str) -> Route:
    daemon = await start_daemon(state)
    stack.push_async_callback(stop_daemon, daemon)
    ws = await stack.enter_async_context(open_websocket_url(daemon.url, message_queue_size=100_000))
    ids = iter(range(1, 1 << 30))

    async def call(method: str, **params: Any) -> dict[str, Any]:
        request_id = next(ids)
        await ws.send_message(json.dumps({"type": method, "id": request_id, **params}))
        while True:
            frame = json.loads(await ws.get_message())
            if frame.get("id") == request_id:
                if frame["type"] != "ok":
                    raise RuntimeError(f"{method}: {frame}")
                return dict(frame.get("result") or {})

    await ws.send_message(json.dumps({"type": "hello", "protocol": 1, "token": daemon.token}))
    json.loads(await ws.get_message())
    session = await call("session.create", harness="fake", cwd=cwd,
                         options={"script": f"exec {sys.executable} -c {_quote(script)}"})
    sid = session["session"]["id"]
    await call("session.subscribe", session_id=sid)

    async def prompt() -> None:
        await call("session.prompt", session_id=sid, text="go")

    return Route("corral", daemon.process.pid, ws, prompt)


async def relay_route(stack: AsyncExitStack, nursery: trio.Nursery, script: str) -> Route:
    process = await nursery.start(_run_relay, script)
    stack.callback(process.kill)
    port = int((await _line(process)).decode())
    ws = await stack.enter_async_context(
        open_websocket_url(f"ws://127.0.0.1:{port}/", message_queue_size=100_000))

    async def prompt() -> None:
        await ws.send_message("go")

    return Route("relay", process.pid, ws, prompt)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=300, help="deltas per round")
    parser.add_argument("--gap", type=float, default=0.002, help="seconds between deltas")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    script = child_script(args.events, args.gap)
    with tempfile.TemporaryDirectory() as tmp:
        async with trio.open_nursery() as nursery, AsyncExitStack() as stack:
            paths = [await corral_route(stack, Path(tmp) / "state", tmp, script),
                     await relay_route(stack, nursery, script)]
            for n in range(args.rounds + 1):  # the first round warms up and is not counted
                for path in paths if n % 2 else paths[::-1]:
                    await path.round(args.events)
                if n == 0:
                    for path in paths:
                        path.latencies.clear()
                        path.cpu.clear()
            print(f"{args.events} deltas {args.gap * 1000:g} ms apart, {args.rounds} rounds per path")
            for path in paths:
                lat = sorted(path.latencies)
                print(f"{path.name:>7}  event latency median {statistics.median(lat):6.2f} ms"
                      f"  p90 {lat[int(0.9 * (len(lat) - 1))]:6.2f} ms"
                      f"   CPU per event {statistics.median(path.cpu):5.0f} µs")
            nursery.cancel_scope.cancel()


async def _run_relay(script: str, task_status: trio.TaskStatus[trio.Process]) -> None:
    await trio.run_process([sys.executable, "-m", "tests.bench.stream_relay", script],
                           stdout=subprocess.PIPE, check=False, task_status=task_status)


async def _line(process: trio.Process) -> bytes:
    assert process.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        chunk = await process.stdout.receive_some(1)
        if not chunk:
            raise RuntimeError("the relay exited before printing its port")
        line += chunk
    return line.strip()


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


if __name__ == "__main__":
    trio.run(main)
