"""The daemon's own footprint: start-up time, idle RSS, and what an idle session costs.

Run: ``python -m tests.bench.bench_daemon_footprint [--sessions N] [--baseline DIR]``
(``--sessions 0``: the start-up and idle figures only). Not collected by pytest. Everything
stays on 127.0.0.1 and the daemon's Unix socket.

Printed, each beside its reference measured in the same run (best of ``--runs``):

* **start-up**: ``corral daemon`` spawned → its ``daemon.json`` written, against a bare
  ``python -c "import trio, trio_websocket"`` spawned → exited (goal: ≤ 1.5× the bare import);
  the CPU seconds each used by then too (the daemon is killed the moment its file is there and
  its CPU read from ``wait4``, to the microsecond), which a machine shared with other work
  inflates far less than the wall time. The rounds alternate (bare, baseline, this tree), so a
  change in the machine's load falls on all of them. Every process runs with its bytecode
  cached, as an installed package has it (pip compiles it on install): a temporary
  ``PYTHONPYCACHEPREFIX`` that an untimed first run fills, with ``PYTHONDONTWRITEBYTECODE``
  unset; otherwise a source tree's ~150 modules would be compiled at every start;
* **idle RSS**: the daemon with no session, against the RSS of that bare import (goal: ≤ 40 MB);
* **idle sessions**: the daemon's RSS with N/2 and N idle fake sessions (default 1,000; goal
  ≤ 100 MB at 1,000), and per-session KiB (the slope between N/2 and N, so start-up
  allocations of the first sessions do not count); then how long the daemon takes to stop with
  them all open (each close surveys the process table; ``supervisor.proc.proctable`` shares
  one read among the closes that ask together, which took 1,000 sessions from over 180 s to
  about 23 s).

``--baseline DIR`` runs the same figures against another source tree (e.g. a checkout of
``main``) in the same run, so a change is measured side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import trio

from tests.e2e.daemonproc import REPO, raw_client, start_daemon, stop_daemon

MB = 2**20
_BARE = ("import trio, trio_websocket; "  # VmRSS from /proc: no psutil in the reference
         "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmRSS')))")


def bytecode_env(cache: Path, source: Path | None = None) -> dict[str, str]:
    """This environment with the bytecode of every module cached in ``cache`` (see above), and
    ``PYTHONPATH`` at ``source`` if given."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def bare_import(cache: Path) -> tuple[float, float, float]:
    """One bare ``import trio, trio_websocket`` process: seconds spawn → exit, its CPU seconds
    (user + system, which a loaded machine inflates far less than wall time), and its RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _BARE], capture_output=True, check=True,
                         cwd=REPO, env=bytecode_env(cache)).stdout
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return took, cpu, int(out) / 1024  # VmRSS: kB


def daemon_ready(source: Path, cache: Path, *, settle: bool = False) -> tuple[float, float, float]:
    """One ``corral daemon``: seconds spawn → ``daemon.json`` readable and the CPU seconds it
    used by then (killed at once, its usage read by ``wait4``); or with ``settle`` (its CPU
    then read at the tick), its RSS once the start-up's background work is done."""
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        state.mkdir()
        ready = state / "daemon.json"
        argv = [sys.executable, "-m", "actors.app", "daemon", "--state-dir", str(state),
                "--port", "0"]
        started = time.perf_counter()
        with open(state / "daemon.out", "wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=source,
                                    env=bytecode_env(cache, source))
        try:
            while True:  # a tight poll: the figure is the start-up, a 1 ms poll is noise
                try:
                    json.loads(ready.read_text())
                    break
                except (FileNotFoundError, json.JSONDecodeError):
                    if proc.poll() is not None:
                        raise RuntimeError((state / "daemon.out").read_text()) from None
                    time.sleep(0.001)
            took = time.perf_counter() - started
            if not settle:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                return took, usage.ru_utime + usage.ru_stime, 0.0
            times = psutil.Process(proc.pid).cpu_times()
            time.sleep(1.0)  # let the start-up's background work (reconcile, warm-ups) settle
            rss = psutil.Process(proc.pid).memory_info().rss / MB
            return took, times.user + times.system, rss
        finally:
            if proc.returncode is None:
                proc.terminate()
                proc.wait(30)


async def idle_sessions(source: Path, sessions: int) -> tuple[float, float, float, float]:
    """Daemon RSS (MiB) with none, ``sessions // 2`` and ``sessions`` idle fake sessions, then
    the seconds from SIGTERM to the daemon's exit with them all open (every child closed)."""
    with tempfile.TemporaryDirectory() as tmp:
        daemon = await start_daemon(Path(tmp) / "state", source=source, timeout=60)
        try:
            proc = psutil.Process(daemon.process.pid)
            await trio.sleep(1.0)
            figures = [proc.memory_info().rss / MB]
            async with raw_client(daemon, unix=True) as client:
                for n in range(sessions):
                    await client.ok("session.create", harness="fake", cwd=tmp)
                    if n + 1 in (sessions // 2, sessions):
                        await trio.sleep(0.5)
                        figures.append(proc.memory_info().rss / MB)
            began = time.monotonic()
            await stop_daemon(daemon, timeout=180)
            return figures[0], figures[1], figures[2], time.monotonic() - began
        finally:
            await stop_daemon(daemon, timeout=180)


def startup(sources: list[Path], runs: int, cache: Path) -> tuple[tuple[float, float, float],
                                                                  list[tuple[float, float]]]:
    """The bare import's best (seconds, CPU, RSS) and each source's best (seconds, CPU) of
    ``runs`` alternating rounds, after an untimed round that fills the bytecode cache."""
    bare_import(cache)
    for source in sources:
        daemon_ready(source, cache)
    bares: list[tuple[float, float, float]] = []
    daemons: list[list[tuple[float, float]]] = [[] for _ in sources]
    for _ in range(runs):
        bares.append(bare_import(cache))
        for source, figures in zip(sources, daemons):
            figures.append(daemon_ready(source, cache)[:2])
    bare = (min(b[0] for b in bares), min(b[1] for b in bares), min(b[2] for b in bares))
    return bare, [(min(f[0] for f in fs), min(f[1] for f in fs)) for fs in daemons]


def report(label: str, source: Path, sessions: int, bare: tuple[float, float, float],
           ready: tuple[float, float], cache: Path) -> None:
    bare_s, bare_cpu, bare_rss = bare
    took, cpu = ready
    rss = daemon_ready(source, cache, settle=True)[2]
    print(f"\n{label} ({source})")
    print(f"  spawn → daemon.json      {took * 1000:7.0f} ms   {took / bare_s:5.2f}× the bare import"
          f" ({bare_s * 1000:.0f} ms)   goal ≤ 1.50×")
    print(f"  CPU by then (user+sys)   {cpu * 1000:7.0f} ms   {cpu / bare_cpu:5.2f}× the bare import"
          f" ({bare_cpu * 1000:.0f} ms; steadier than wall time on a loaded machine)")
    print(f"  RSS, no session          {rss:7.1f} MiB  {rss / bare_rss:5.2f}× the bare import"
          f" ({bare_rss:.1f} MiB)   goal ≤ 40 MB")
    if not sessions:
        return
    idle, half, full, stop = trio.run(idle_sessions, source, sessions)
    per = (full - half) * 1024 / (sessions - sessions // 2)
    print(f"  RSS, no session (bench)  {idle:7.1f} MiB")
    print(f"  RSS, {sessions // 2:>5} idle sessions {half:7.1f} MiB")
    print(f"  RSS, {sessions:>5} idle sessions {full:7.1f} MiB   goal ≤ 100 MB at 1,000")
    print(f"  per idle session         {per:7.1f} KiB  (slope {sessions // 2} → {sessions}; "
          f"{(full - idle) * 1024 / sessions:.1f} KiB averaged from none)")
    print(f"  stop, {sessions:>5} idle sessions {stop:7.1f} s    (SIGTERM → exit, every child closed)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another source tree to measure alongside")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}")
    sources = [*([args.baseline.resolve()] if args.baseline is not None else []), REPO]
    with tempfile.TemporaryDirectory() as cache:
        bare, ready = startup(sources, args.runs, Path(cache))
        print(f"reference: python -c 'import trio, trio_websocket'  {bare[0] * 1000:.0f} ms, "
              f"{bare[1] * 1000:.0f} ms CPU, {bare[2]:.1f} MiB (best of {args.runs}; bytecode "
              f"cached, as installed; load now {os.getloadavg()[0]:.1f})")
        for label, source, figures in zip(("baseline", "this tree")[2 - len(sources):], sources, ready):
            report(label, source, args.sessions, bare, figures, Path(cache))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
