"""Benchmark: process children and the crash ledger. Run ``python -m tests.bench.bench_process``.

Prints, next to references measured in the same run:

* spawn+close cycles per second through ``open_child`` (with and without a ledger; the goodbye
  path, where ``cat`` exits at stdin EOF, and the brutal-kill path), against bare
  ``subprocess.Popen`` + close/kill + ``wait`` of the same programs;
* ``reconcile`` time for 1,000 ledger rows (all stale; half naming live processes with another
  start token; and 20 live leaders with grandchildren among 1,000 rows), against one bare scan
  of every process's environment, which reconcile cannot beat.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import psutil
import trio

from supervisor.proc import prctl
from supervisor.proc import reaper
from supervisor.proc.identity import StartToken, boot_id, read_marker
from supervisor.ledger import reconcile
from supervisor.ledger.store import Ledger, LedgerRow, argv_hash, load, write
from supervisor.proc.child import ProcessSpec, open_child
from tests.fakes.proctools import start_python

CYCLES = 100
REPEATS = 3  # each figure is the best of REPEATS runs: the machine may be shared


def _best(run: Callable[[], float]) -> float:
    return min(run() for _ in range(REPEATS))


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds:8.1f}/s  ({seconds / n * 1000:6.2f} ms each)"


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _popen_cycles(argv: list[str], end: Callable[[subprocess.Popen[bytes]], None]) -> float:
    start = time.perf_counter()
    for _ in range(CYCLES):
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        end(proc)
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    return time.perf_counter() - start


def _close_stdin(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        proc.stdin.close()


async def _child_cycles(
    argv: list[str], shutdown: float, ledger: Ledger | None, death: str | None = "SIGTERM"
) -> float:
    start = time.perf_counter()
    for i in range(CYCLES):
        spec = ProcessSpec(key=f"b{i}", argv=argv, shutdown=shutdown, death_signal=death)
        async with open_child(spec, ledger=ledger):
            pass
    return time.perf_counter() - start


async def _concurrent_cycles(ledger: Ledger, width: int) -> float:
    start = time.perf_counter()

    async def worker(w: int) -> None:
        for i in range(CYCLES // width):
            async with open_child(ProcessSpec(key=f"w{w}.{i}", argv=["cat"]), ledger=ledger):
                pass

    async with trio.open_nursery() as nursery:
        for w in range(width):
            nursery.start_soon(worker, w)
    return time.perf_counter() - start


def _dead_pids(n: int) -> list[int]:
    pids: list[int] = []
    with open("/proc/sys/kernel/pid_max") as f:
        pid = int(f.read())
    while len(pids) < n:
        pid -= 1
        if not psutil.pid_exists(pid):
            pids.append(pid)
    return pids


def _row(key: str, pid: int, token: StartToken) -> LedgerRow:
    argv = ["sleep", "1000"]
    return LedgerRow(key=key, kind="bench", pid=pid, pgid=pid, token=token,
                     argv_hash=argv_hash(argv), argv=argv, started_at=time.time())


def _reconcile_case(rows: list[LedgerRow]) -> tuple[float, int, int]:
    state = tempfile.mkdtemp(prefix="corral-bench-")
    write(os.path.join(state, "ledger.json"), rows)
    start = time.perf_counter()
    report = reconcile(state, grace=5.0)
    return time.perf_counter() - start, len(report.killed), len(report.stale)


def _abandon_live(state: str, n: int) -> None:
    """A stand-in daemon spawns ``n`` leaders with three grandchildren each; then it is killed."""
    daemon = start_python("daemon", state, str(n), "plain")
    assert daemon.stdout is not None
    daemon.stdout.readline()
    daemon.kill()
    daemon.wait()
    daemon.stdout.close()


def main() -> None:
    """Run every measurement and print the table."""
    prctl.set_child_subreaper()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, {len(psutil.pids())} processes")
    print(f"\nspawn+close, {CYCLES} cycles, best of {REPEATS} runs")
    ledger = Ledger(tempfile.mkdtemp(prefix="corral-bench-"))
    trio.run(_child_cycles, ["cat"], 5.0, ledger)  # warm up: imports, the spawner thread
    ref_cat = _best(lambda: _popen_cycles(["cat"], _close_stdin))
    ref_kill = _best(lambda: _popen_cycles(["sleep", "1000"], lambda p: p.kill()))
    ours_cat = _best(lambda: trio.run(_child_cycles, ["cat"], 5.0, ledger))
    ours_cat_bare = _best(lambda: trio.run(_child_cycles, ["cat"], 5.0, None))
    ours_cat_vfork = _best(lambda: trio.run(_child_cycles, ["cat"], 5.0, None, None))
    ours_kill = _best(lambda: trio.run(_child_cycles, ["sleep", "1000"], 0.0, ledger))
    ours_concurrent = _best(lambda: trio.run(_concurrent_cycles, ledger, 8))
    print(f"  reference Popen(cat) + close stdin + wait      {_rate(CYCLES, ref_cat)}")
    print(f"  open_child(cat), goodbye, ledger               {_rate(CYCLES, ours_cat)}")
    print(f"  open_child(cat), goodbye, no ledger            {_rate(CYCLES, ours_cat_bare)}")
    print(f"  ... and no parent-death signal (vfork)         {_rate(CYCLES, ours_cat_vfork)}")
    print(f"  open_child(cat), 8 concurrent, ledger          {_rate(CYCLES, ours_concurrent)}")
    print(f"  reference Popen(sleep) + kill + wait           {_rate(CYCLES, ref_kill)}")
    print(f"  open_child(sleep), brutal kill, ledger         {_rate(CYCLES, ours_kill)}")

    print("\nreconcile, 1,000 rows")
    floor = _best(lambda: _timed(lambda: [read_marker(pid) for pid in psutil.pids()]))
    print(f"  reference: one environ scan of every process   {floor * 1000:8.1f} ms")
    boot = boot_id()
    dead = [_row(f"dead{i}", pid, StartToken(boot_id=boot, create_time=1.0, start_ticks=1))
            for i, pid in enumerate(_dead_pids(1000))]
    scratch = os.path.join(tempfile.mkdtemp(prefix="corral-bench-"), "ledger.json")
    write(scratch, dead)
    took = _best(lambda: _timed(lambda: load(scratch)))
    print(f"  reference: decode 1,000 rows                   {took * 1000:8.1f} ms")
    took, killed, stale = min(_reconcile_case(dead) for _ in range(REPEATS))
    print(f"  1,000 stale rows (pids gone)                   {took * 1000:8.1f} ms  "
          f"killed={killed} stale={stale}")
    live = psutil.pids()
    wrong = [_row(f"reused{i}", live[i % len(live)],
                  StartToken(boot_id=boot, create_time=1.0, start_ticks=1)) for i in range(500)]
    took, killed, stale = min(_reconcile_case(dead[:500] + wrong) for _ in range(REPEATS))
    print(f"  500 gone + 500 live pids, other start token    {took * 1000:8.1f} ms  "
          f"killed={killed} stale={stale}")
    state = tempfile.mkdtemp(prefix="corral-bench-")
    _abandon_live(state, 20)
    path = os.path.join(state, "ledger.json")
    write(path, load(path)[0] + dead[:980])
    start = time.perf_counter()
    report = reconcile(state, grace=5.0)
    took = time.perf_counter() - start
    print(f"  20 live leaders (+60 grandchildren) + 980 gone {took * 1000:8.1f} ms  "
          f"killed={len(report.killed)} stale={len(report.stale)} survivors={report.survivors}")
    reaper.reap_orphans()


if __name__ == "__main__":
    main()
