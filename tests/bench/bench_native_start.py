"""Native session start-up and memory: workers forked by the fork server vs a cold start.

Run: ``python -m tests.bench.bench_native_start [--sessions N]``. Not collected by pytest.
Everything stays on 127.0.0.1 (a fake model server in this process).

Printed, each beside a reference measured in the same run:

* **reference**: a cold ``python -c "import google.adk.runners"`` (``import google.adk`` alone
  is lazy): its wall time from spawn to exit, and its RSS and USS once imported (best of 3);
* **cold worker**: ``python -m actors.native`` exec'd as the daemon did before the fork server:
  ``start`` frame → ``init`` event, and its USS idle after one turn;
* **corral**: a ``corral daemon`` creating N native sessions in a row: ``session.create`` →
  the session's ``init`` event at the client, for session 1 (which starts the fork server) and
  p50/p90 of sessions 2..N (target: p50 ≤ 150 ms); then one turn in each, and the USS of each
  idle worker (target: ≤ 50 MB), the template's RSS and USS, and the fork/fallback counts the
  daemon's log shows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import trio

from protocol.events import Init, Result
from protocol.framing import LengthPrefixFramer
from protocol.native import Prompt, ProviderSettings, Shutdown, Start, decode_event, encode_command
from supervisor.proc.child import ProcessChild, ProcessSpec, open_child
from tests.bench.turns import percentile
from tests.e2e.daemonproc import REPO, RawClient, raw_client, start_daemon, stop_daemon
from tests.fakes.model_server import FakeModels

MB = 1024 * 1024
KEY = "sk-bench-0123456789"
_IMPORT = ("import json, time, psutil; t = time.perf_counter(); import google.adk.runners; "
           "t = time.perf_counter() - t; m = psutil.Process().memory_full_info(); "
           "print(json.dumps({'import_s': t, 'rss': m.rss, 'uss': m.uss}))")


def cold_import() -> dict[str, float]:
    """The best of 3 cold ``import google.adk.runners`` processes."""
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", _IMPORT], capture_output=True, check=True,
                             cwd=REPO).stdout
        runs.append({**json.loads(out), "wall_s": time.perf_counter() - started})
    return min(runs, key=lambda r: r["wall_s"])


def start_frame(work: Path, port: int) -> bytes:
    provider = ProviderSettings(kind="openai", provider="openai", model="fake-model",
                                base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY)
    start = Start(cwd=str(work), model="openai/fake-model", provider=provider,
                  store_dir=str(work.parent / "cold-store"))
    return LengthPrefixFramer().encode(encode_command(start))


async def until(child: ProcessChild, kind: type) -> None:
    while not isinstance(decode_event(await child.receive_frame()), kind):
        pass


async def cold_worker(work: Path, port: int) -> tuple[float, int]:
    """An exec'd worker: seconds from its spawn to ``init``, and its USS idle after a turn."""
    spec = ProcessSpec(key="cold", argv=[sys.executable, "-m", "actors.native"], cwd=str(REPO),
                       framing="length_prefix")
    started = time.perf_counter()
    async with open_child(spec) as child:
        await child.send(start_frame(work, port))
        await until(child, Init)
        spawn_to_init = time.perf_counter() - started
        await child.send(LengthPrefixFramer().encode(encode_command(Prompt(text="hello"))))
        await until(child, Result)
        uss = psutil.Process(child.pid).memory_full_info().uss
        await child.send(LengthPrefixFramer().encode(encode_command(Shutdown())))
        await child.wait()
    return spawn_to_init, uss


async def create(client: RawClient, work: Path, port: int) -> tuple[str, float]:
    """One native session; its id and the seconds from ``session.create`` to its ``init``."""
    params: dict[str, Any] = {
        "harness": "native", "cwd": str(work), "model": "openai/fake-model",
        "options": {"base_url": f"http://127.0.0.1:{port}/v1"},
        "env": {"OPENAI_API_KEY": KEY}, "permissions": {"mode": "auto"}}
    started = time.perf_counter()
    sid = str((await client.ok("session.create", **params))["session"]["id"])
    await client.ok("session.subscribe", session_id=sid)
    await client.events_until(sid, lambda f: f["event"]["type"] == "init", 300)
    return sid, time.perf_counter() - started


def mb(value: float) -> str:
    return f"{value / MB:6.1f} MB"


async def main(sessions: int) -> None:
    reference = cold_import()
    print(f"reference  cold `import google.adk.runners`: wall {reference['wall_s'] * 1000:7.0f} ms"
          f" (import {reference['import_s'] * 1000:.0f} ms)  RSS {mb(reference['rss'])}"
          f"  USS {mb(reference['uss'])}")
    server = FakeModels()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        work = tmp / "work"
        work.mkdir()
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            cold_s, cold_uss = await cold_worker(work, port)
            print(f"cold worker  spawn → init {cold_s * 1000:7.0f} ms"
                  f"   USS idle after one turn {mb(cold_uss)}")
            daemon = await start_daemon(tmp / "state")
            try:
                async with raw_client(daemon) as client:
                    created = [await create(client, work, port) for _ in range(sessions)]
                    times = [s * 1000 for _, s in created[1:]]
                    print(f"corral  create → init: session 1 {created[0][1] * 1000:7.0f} ms"
                          f" (starts the fork server);  sessions 2..{sessions}: p50"
                          f" {statistics.median(times):6.1f} ms  p90 {percentile(times, 0.9):6.1f}"
                          f" ms  max {max(times):6.1f} ms   (target p50 ≤ 150 ms)")
                    for sid, _ in created:
                        await client.ok("session.prompt", session_id=sid, text="hello")
                        await client.events_until(
                            sid, lambda f: f["event"]["type"] == "result", 300)
                    status = await client.ok("daemon.status")
                    workers = [c["pid"] for c in status["children"]
                               if c["kind"] == "harness:native"]
                    (template,) = [c["pid"] for c in status["children"]
                                   if c["kind"] == "native-forkserver"]
                    uss = [psutil.Process(pid).memory_full_info().uss for pid in workers]
                    tm = psutil.Process(template).memory_full_info()
                    print(f"corral  USS of each idle worker after one turn (n={len(uss)}): p50"
                          f" {mb(statistics.median(uss))}  max {mb(max(uss))}   (target ≤ 50 MB;"
                          f" cold worker {mb(cold_uss)})")
                    print(f"        the template: RSS {mb(tm.rss)}  USS {mb(tm.uss)}")
                    for sid, _ in created:
                        await client.ok("session.close", session_id=sid)
            finally:
                await stop_daemon(daemon)
            nursery.cancel_scope.cancel()
        log = (tmp / "state" / "test-daemon.out").read_text(errors="replace")
        fallbacks = log.count("starting the worker with a plain exec")
        print(f"        fallbacks to a plain exec: {fallbacks} of {sessions}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=20)
    trio.run(main, parser.parse_args().sessions)
