"""The first native session and the first ``harness.list`` after a start: cold vs prewarmed.

Run: ``python -m tests.bench.bench_first_native [--runs N] [--after SECONDS]``. Not collected by
pytest. Everything stays on 127.0.0.1 (a fake model server in this process).

Printed side by side, each measured in the same run on fresh daemons:

* **cold** (the reference: ``[native] prewarm = false``, ``[harnesses] prewarm = false``): the
  first native ``session.create`` → its ``init`` event at the client, made right after the
  daemon is ready (``daemon.json`` written, as ``corral start`` returns), so it waits for the
  fork server's whole start; and a first ``harness.list`` on a cold detection cache.
* **prewarmed** (the default config): the same, made ``--after`` seconds (default 15) after the
  daemon is ready (target: ``init`` within 1 s, ``harness.list`` within 1 s).
* **hurried** (the default config, create 5 s after the start): a create that finds the
  background warm-up under way, so a normal-priority fork server starts beside it and the first
  ready one serves.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from tests.e2e.daemonproc import raw_client, start_daemon, stop_daemon
from tests.fakes.model_server import FakeModels

KEY = "sk-bench-0123456789"


async def first_session(tmp: Path, port: int, *, prewarm: bool, after: float) -> tuple[float, float]:
    """A fresh daemon; ``after`` s after it is ready, seconds of a first native create →
    ``init``, then of a first ``harness.list``."""
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    daemon = await start_daemon(tmp / "state", prewarm=prewarm)
    ready = time.perf_counter()
    try:
        async with raw_client(daemon) as client:
            await trio.sleep(max(0.0, after - (time.perf_counter() - ready)))
            params: dict[str, Any] = {
                "harness": "native", "cwd": str(work), "model": "openai/fake-model",
                "options": {"base_url": f"http://127.0.0.1:{port}/v1"},
                "env": {"OPENAI_API_KEY": KEY}, "permissions": {"mode": "auto"}}
            started = time.perf_counter()
            sid = str((await client.ok("session.create", timeout=300, **params))["session"]["id"])
            await client.ok("session.subscribe", session_id=sid)
            await client.events_until(sid, lambda f: f["event"]["type"] == "init", 300)
            created = time.perf_counter() - started
            started = time.perf_counter()  # after the create: the cold daemon's cache is still cold
            await client.ok("harness.list", timeout=120)
            listed = time.perf_counter() - started
            await client.ok("session.close", session_id=sid)
    finally:
        await stop_daemon(daemon)
    return listed, created


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.0f} ms" + (
        f" (max {max(values) * 1000:.0f})" if len(values) > 1 else "")


async def main(runs: int, after: float) -> None:
    server = FakeModels()
    figures: dict[str, tuple[list[float], list[float]]] = {}
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        for name, prewarm, wait in (("cold", False, 0.0), ("prewarmed", True, after),
                                    ("hurried", True, 5.0)):
            listed, created = figures.setdefault(name, ([], []))
            for _ in range(runs):
                with tempfile.TemporaryDirectory(prefix="bfn-", dir="/tmp") as tmp:
                    one = await first_session(Path(tmp), port, prewarm=prewarm, after=wait)
                listed.append(one[0])
                created.append(one[1])
        nursery.cancel_scope.cancel()
    cold_list, cold_create = figures["cold"]
    for name, when in (("prewarmed", f"{after:g} s"), ("hurried", "5 s")):
        listed, created = figures[name]
        print(f"{name:9}  create → init {when} after start: {ms(created)}   "
              f"(cold, right after start: {ms(cold_create)}; target ≤ 1000 ms)")
        print(f"{name:9}  first harness.list {when} after start: {ms(listed)}   "
              f"(cold cache, right after start: {ms(cold_list)}; target ≤ 1000 ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--after", type=float, default=15.0)
    arguments = parser.parse_args()
    trio.run(main, arguments.runs, arguments.after)
