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
from ``/proc/<pid>/task/*/schedstat``: exact, unlike the tick-sampled ``cpu_times``). Then the
same for ``--turns`` *empty* turns (a child that answers each prompt with a result at once):
prompt to result, what a daemon adds to every turn whatever the vendor.
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

    def __init__(self, name: str, pid: int, ws: WebSocketConnection, prompt: Any,
                 early: list[dict[str, Any]]) -> None:
        self.name = name
        self.pid = pid
        self.ws = ws
        self.prompt = prompt
        self.early = early
        """Frames that came while ``prompt`` waited for its answer (with their arrival time)."""
        self.latencies: list[float] = []
        self.cpu: list[float] = []
        self.turns: list[float] = []

    async def round(self, events: int) -> None:
        """Prompt once; read every delta (noting its latency) up to the result."""
        before = cpu_ns(self.pid)
        started = time.perf_counter()
        await self.prompt()
        seen = 0
        while True:
            if self.early:
                frame = self.early.pop(0)
                arrived = frame.pop("_arrived")
            else:
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
        self.turns.append((time.perf_counter() - started) * 1000)
        if seen != events:
            raise RuntimeError(f"{self.name}: {seen} deltas, {events} written")
        self.cpu.append((cpu_ns(self.pid) - before) / max(events, 1) / 1000)


async def corral_route(stack: AsyncExitStack, state: Path, cwd: str, script: str) -> Route:
    daemon = await start_daemon(state)
    stack.push_async_callback(stop_daemon, daemon)
    ws = await stack.enter_async_context(open_websocket_url(daemon.url, message_queue_size=100_000))
    ids = iter(range(1, 1 << 30))
    early: list[dict[str, Any]] = []

    async def call(method: str, **params: Any) -> dict[str, Any]:
        request_id = next(ids)
        await ws.send_message(json.dumps({"type": method, "id": request_id, **params}))
        while True:
            frame = json.loads(await ws.get_message())
            if frame.get("id") == request_id:
                if frame["type"] != "ok":
                    raise RuntimeError(f"{method}: {frame}")
                return dict(frame.get("result") or {})
            early.append({**frame, "_arrived": time.time()})

    await ws.send_message(json.dumps({"type": "hello", "protocol": 1, "token": daemon.token}))
    json.loads(await ws.get_message())
    session = await call("session.create", harness="fake", cwd=cwd,
                         options={"script": f"exec {sys.executable} -c {_quote(script)}"})
    sid = session["session"]["id"]
    await call("session.subscribe", session_id=sid)
    early.clear()

    async def prompt() -> None:
        await call("session.prompt", session_id=sid, text="go")

    return Route("corral", daemon.process.pid, ws, prompt, early)


async def relay_route(stack: AsyncExitStack, nursery: trio.Nursery, script: str) -> Route:
    process = await nursery.start(_run_relay, script)
    stack.callback(process.kill)
    port = int((await _line(process)).decode())
    ws = await stack.enter_async_context(
        open_websocket_url(f"ws://127.0.0.1:{port}/", message_queue_size=100_000))

    async def prompt() -> None:
        await ws.send_message("go")

    return Route("relay", process.pid, ws, prompt, [])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=300, help="deltas per streamed round")
    parser.add_argument("--gap", type=float, default=0.002, help="seconds between deltas")
    parser.add_argument("--rounds", type=int, default=8, help="streamed rounds per route")
    parser.add_argument("--turns", type=int, default=200, help="empty turns per route")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        streamed = await _measure(Path(tmp) / "streamed", child_script(args.events, args.gap),
                                  args.rounds, args.events)
        print(f"{args.events} deltas {args.gap * 1000:g} ms apart, {args.rounds} rounds per route")
        for route in streamed:
            lat = sorted(route.latencies)
            print(f"{route.name:>7}  event latency median {statistics.median(lat):6.2f} ms"
                  f"  p90 {_p90(lat):6.2f} ms   CPU per event {statistics.median(route.cpu):5.0f} µs")
        empty = await _measure(Path(tmp) / "empty", child_script(0, 0), args.turns, 0)
        print(f"an empty turn (prompt in, result out, nothing between), {args.turns} per route")
        for route in empty:
            turns = sorted(route.turns)
            print(f"{route.name:>7}  turn median {statistics.median(turns):6.2f} ms  p90 {_p90(turns):6.2f} ms"
                  f"   CPU per turn {statistics.median(route.cpu):5.0f} µs")


async def _measure(root: Path, script: str, rounds: int, events: int) -> list[Route]:
    """``rounds`` rounds (after one to warm up) on a corral route and a relay route, alternating."""
    root.mkdir()
    async with trio.open_nursery() as nursery, AsyncExitStack() as stack:
        routes = [await corral_route(stack, root / "state", str(root), script),
                  await relay_route(stack, nursery, script)]
        for n in range(rounds + 1):
            for route in routes if n % 2 else routes[::-1]:
                await route.round(events)
            if n == 0:
                for route in routes:
                    route.latencies.clear()
                    route.cpu.clear()
                    route.turns.clear()
        nursery.cancel_scope.cancel()
    return routes


def _p90(ordered: list[float]) -> float:
    return ordered[int(0.9 * (len(ordered) - 1))]


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
