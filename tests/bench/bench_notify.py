"""What notifications cost a session: fake turns on a daemon without ``[[notify]]`` next to one
that posts every event to a receiver, a slow endpoint (never answers) and a dead one (a refused
port), in the same run. The receiver and the slow endpoint are processes of their own
(``python -m tests.fakes.webhook``), so this process's loop only drives the clients.

Run: ``python -m tests.bench.bench_notify [--turns 40] [--rounds 3] [--endpoints
receiver,slow,dead]``. Not collected by pytest.
Everything stays on 127.0.0.1.

Each round runs ``--turns`` fake-harness turns (a prompt, its echoed answer, its ``result``) on
each daemon, in an order that rotates round by round; a turn is timed by its client from the
``session.prompt`` to the ``result`` event read off the socket. Reported per daemon: the median
and p90 turn and the daemon's CPU per turn (its threads' scheduler time, which a loaded machine
disturbs less than latency), the notify daemon's over the plain one, and the notifier's warnings in its log
(the dead endpoint's give-ups; the slow one holds a post at a time, so its queue fills and drops).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from tests.bench.turns import cpu_ns
from tests.e2e.daemonproc import DaemonProc, raw_client, start_daemon, stop_daemon
from tests.fakes.webhook import refused_port


async def turns(daemon: DaemonProc, count: int, cwd: Path) -> list[float]:
    """Seconds of each of ``count`` turns of a new fake session."""
    out: list[float] = []
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(cwd)))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        for n in range(count):
            start = time.perf_counter()
            await client.ok("session.prompt", session_id=sid, text=f"turn {n}")
            await client.events_until(sid, lambda f: f["event"]["type"] == "result", timeout=60)
            out.append(time.perf_counter() - start)
        await client.ok("session.close", session_id=sid)
    return out


def figures(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"median {statistics.median(ordered) * 1000:6.1f} ms  p90 {p90 * 1000:6.1f} ms  (n={len(ordered)})"


def main(count: int, rounds: int, kinds: list[str]) -> None:
    """Start the endpoints (processes of their own), then compare the two daemons."""
    flags = [flag for kind, flag in (("receiver", []), ("slow", ["--hold"])) if kind in kinds]
    endpoints = [subprocess.Popen([sys.executable, "-m", "tests.fakes.webhook", *flag],
                                  stdout=subprocess.PIPE, text=True) for flag in flags]
    urls = [proc.stdout.readline().strip() for proc in endpoints if proc.stdout is not None]
    if "dead" in kinds:
        urls.append(f"http://127.0.0.1:{refused_port()}/dead")
    print(f"endpoints: {', '.join(kinds)}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            trio.run(compare, Path(tmp), urls, count, rounds)
    finally:
        for proc in endpoints:
            proc.kill()
            proc.wait()


async def compare(root: Path, urls: list[str], count: int, rounds: int) -> None:
    config = root / "notify.toml"
    config.write_text("".join(f'[[notify]]\nurl = "{url}"\n' for url in urls))
    plain = await start_daemon(root / "plain", timeout=60)
    notify = await start_daemon(root / "notify", config=str(config), timeout=60)
    paths = {"plain": plain, "notify": notify}
    samples: dict[str, list[float]] = {name: [] for name in paths}
    cpu = dict.fromkeys(paths, 0)
    try:
        for round_ in range(rounds):
            order = list(paths) if round_ % 2 == 0 else list(reversed(paths))
            for name in order:
                before = cpu_ns(paths[name].process.pid)
                samples[name] += await turns(paths[name], count, root)
                cpu[name] += cpu_ns(paths[name].process.pid) - before
    finally:
        for daemon in paths.values():
            await stop_daemon(daemon)
    per_turn = {name: cpu[name] / len(samples[name]) / 1e6 for name in paths}
    for name, values in samples.items():
        print(f"{name:7} {figures(values)}  daemon CPU {per_turn[name]:5.2f} ms/turn")
    ratio = statistics.median(samples["notify"]) / statistics.median(samples["plain"])
    print(f"notify/plain: median turn {ratio:.2f}x, daemon CPU per turn "
          f"{per_turn['notify'] / per_turn['plain']:.2f}x")
    log = (notify.state_dir / "test-daemon.out").read_text(errors="replace")
    print(f"notifier warnings: {log.count('gave up on')} give-ups, {log.count('queue full')} full queues")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--endpoints", default="receiver,slow,dead",
                        help="which of receiver, slow, dead the notify daemon posts to")
    args = parser.parse_args()
    main(args.turns, args.rounds, args.endpoints.split(","))
