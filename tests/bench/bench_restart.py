"""Restart latency of a crashing harness child: SIGKILL to the new child running (its ``init``
event seen by a client), through a real daemon; next to a bare spawn of the same child measured
in the same run.

Run: ``python -m tests.bench.bench_restart [--crashes N]``. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from tests.e2e.daemonproc import raw_client, start_daemon, stop_daemon


async def restart_latencies(crashes: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "corral.toml"
        # No backoff and a high intensity: this measures the restart path itself.
        config.write_text(f"[sessions]\nrestart_intensity = {crashes + 5}\nbackoff_initial = 0.0\n"
                          "backoff_max = 0.0\n")
        daemon = await start_daemon(Path(tmp) / "state", config=str(config))
        try:
            async with raw_client(daemon, unix=True) as client:
                sid = (await client.ok("session.create", harness="fake", cwd=tmp))["session"]["id"]
                await client.ok("session.subscribe", session_id=sid)
                await client.events_until(sid, lambda f: f["event"]["type"] == "init")
                latencies = []
                for _ in range(crashes):
                    pid = (await client.ok("session.get", session_id=sid))["session"]["pid"]
                    start = time.perf_counter()
                    os.kill(pid, signal.SIGKILL)
                    await client.events_until(sid, lambda f: f["event"]["type"] == "init")
                    latencies.append(time.perf_counter() - start)
                return latencies
        finally:
            await stop_daemon(daemon)


def bare_spawn_latencies(runs: int) -> list[float]:
    """Spawn the same fake child with Popen and wait for its first line (its init)."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "actors.fake.child"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        assert proc.stdout is not None
        proc.stdout.readline()
        out.append(time.perf_counter() - start)
        proc.kill()
        proc.wait()
    return out


def _ms(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[int(len(values) * 0.9) - 1]
    return f"median {statistics.median(values) * 1000:6.1f} ms, p90 {p90 * 1000:6.1f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--crashes", type=int, default=20)
    args = parser.parse_args()
    ours = await restart_latencies(args.crashes)
    bare = bare_spawn_latencies(args.crashes)
    print(f"crash -> new child running, through corral ({args.crashes} crashes): {_ms(ours)}")
    print(f"bare Popen of the same child to its first line (reference):   {_ms(bare)}")


if __name__ == "__main__":
    trio.run(main)
