"""Events per second from one fake session to 1 and to 8 attached clients, next to raw
trio-websocket throughput of the same frames measured in the same run; then the daemon's RSS
with 100 idle fake sessions.

Run: ``python -m tests.bench.bench_fanout [--events N] [--runs N]``. Not collected by pytest.
The daemon's runs and the raw ones take turns, so a burst of load on the shared machine falls
on both; the ratio of each pair is printed beside the ratio of the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil
import trio
from trio_websocket import open_websocket_url, serve_websocket

from tests.e2e.daemonproc import raw_client, start_daemon, stop_daemon

_TEXT = "x" * 64


def _flood_script(events: int) -> str:
    return (
        "read line; python3 -c \"import json,sys\n"
        f"line=json.dumps({{'type':'assistant','text':'{_TEXT}','delta':True}})+'\\n'\n"
        f"sys.stdout.write(line*{events})\n"
        "sys.stdout.write(json.dumps({'type':'result','stop_reason':'end_turn','is_error':False})+'\\n')\n"
        "sys.stdout.flush()\"; sleep 600"
    )


async def corral_rate(events: int, clients: int) -> float:
    """Events/s seen by the slowest of ``clients`` subscribers of one flooding fake session."""
    with tempfile.TemporaryDirectory() as tmp:
        daemon = await start_daemon(Path(tmp) / "state", config=_write_config(Path(tmp), events))
        try:
            async with raw_client(daemon, unix=True) as control:
                sid = (await control.ok("session.create", harness="fake", cwd=tmp,
                                        options={"script": _flood_script(events)}))["session"]["id"]
                done_at: list[float] = []
                ready = trio.Event()
                subscribed = [0]

                async def watch() -> None:
                    async with raw_client(daemon, unix=True) as client:
                        await client.ok("session.subscribe", session_id=sid)
                        subscribed[0] += 1
                        if subscribed[0] == clients:
                            ready.set()
                        await client.events_until(sid, lambda f: f["type"] == "event"
                                                  and f["event"]["type"] == "result", timeout=300)
                        done_at.append(time.perf_counter())

                async with trio.open_nursery() as nursery:
                    for _ in range(clients):
                        nursery.start_soon(watch)
                    await ready.wait()
                    start = time.perf_counter()
                    await control.ok("session.prompt", session_id=sid, text="go")
            return events / (max(done_at) - start)
        finally:
            await stop_daemon(daemon)


def _write_config(tmp: Path, events: int) -> str:
    path = tmp / "corral.toml"
    # Queues large enough that a client reading at full speed is never lagged by the burst.
    path.write_text(f"[daemon]\nclient_queue = {events + 100}\n")
    return str(path)


async def raw_rate(events: int, clients: int) -> float:
    """The same frames pushed by a bare trio-websocket server (in this process) to ``clients``."""
    frame = json.dumps({"type": "event", "session_id": "s-000000000000", "seq": 1,
                        "ts": "2026-12-02T10:00:00.000Z",
                        "event": {"type": "assistant", "text": _TEXT, "delta": True}})
    go, connected = trio.Event(), trio.Event()
    accepted = [0]

    async def handler(request: object) -> None:
        ws = await request.accept()  # type: ignore[attr-defined]
        accepted[0] += 1
        if accepted[0] == clients:
            connected.set()
        await go.wait()
        for _ in range(events):
            await ws.send_message(frame)
        await ws.send_message("end")

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
        url = f"ws://127.0.0.1:{server.port}/"
        done_at: list[float] = []

        async def reader() -> None:
            async with open_websocket_url(url, message_queue_size=1024) as ws:
                while await ws.get_message() != "end":
                    pass
                done_at.append(time.perf_counter())

        async with trio.open_nursery() as readers:
            for _ in range(clients):
                readers.start_soon(reader)
            await connected.wait()  # every reader is connected before the clock starts
            start = time.perf_counter()
            go.set()
        nursery.cancel_scope.cancel()
    return events / (max(done_at) - start)


async def idle_rss(sessions: int) -> tuple[float, float]:
    """Daemon RSS (MiB) before and after ``sessions`` idle fake sessions."""
    with tempfile.TemporaryDirectory() as tmp:
        daemon = await start_daemon(Path(tmp) / "state")
        try:
            proc = psutil.Process(daemon.process.pid)
            before = proc.memory_info().rss / 2**20
            async with raw_client(daemon, unix=True) as client:
                for _ in range(sessions):
                    await client.ok("session.create", harness="fake", cwd=tmp)
                after = proc.memory_info().rss / 2**20
            return before, after
        finally:
            await stop_daemon(daemon, timeout=120)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=100)
    args = parser.parse_args()
    print(f"fan-out of {args.events} events ({len(_TEXT)}-char deltas), median of {args.runs} runs")
    print(f"{'clients':>8} {'corral ev/s':>14} {'raw trio-websocket msg/s':>26} {'ratio':>7}")
    for clients in (1, 8):
        ours, raw = [], []
        for _ in range(args.runs):  # interleaved, so a burst of load on the machine hits both
            ours.append(await corral_rate(args.events, clients))
            raw.append(await raw_rate(args.events, clients))
        ratios = sorted(o / r for o, r in zip(ours, raw))
        print(f"{clients:>8} {statistics.median(ours):>14,.0f} {statistics.median(raw):>26,.0f} "
              f"{statistics.median(ours) / statistics.median(raw):>7.2f}"
              f"   (per run {' '.join(f'{r:.2f}' for r in ratios)})")
    before, after = await idle_rss(args.sessions)
    print(f"daemon RSS: {before:.1f} MiB idle, {after:.1f} MiB with {args.sessions} idle fake sessions "
          f"({(after - before) * 1024 / args.sessions:.0f} KiB per session)")
    sys.stdout.flush()


if __name__ == "__main__":
    trio.run(main)
