"""What a sandbox adds to a spawn: ``/bin/true`` started and reaped through corral's own child
API (``supervisor.proc.open_child``), unconfined and in each confinement, in interleaved rounds.

Run: ``python3 -m tests.bench.bench_sandbox_spawn [--rounds N]``. Not collected by pytest.

Paths, each timed from the spawn to the reaped exit status:

* **plain**: no sandbox (the reference, measured in the same run);
* **bwrap**: bubblewrap with the plan a session gets (user namespace, no capabilities, read-only
  root, private ``/tmp``, a writable cwd), ``net = "on"``, without ``setpriv`` in front (as a
  session spawns it: bubblewrap gives itself the parent-death signal);
* **bwrap+netns**: the same with its own network namespace (``net = "off"``);
* **landlock**: Landlock rules enforced in the child before its exec (a full ``fork``).

Goal (issue 28): at most 5 ms a spawn over **plain**. A second table times the same argvs with
``subprocess.run`` (no corral in between), to tell the confinement's own cost from the machine's
load.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

from supervisor.proc.child import open_child
from supervisor.proc.spawn import spawn
from supervisor.proc.spec import ProcessSpec
from supervisor.sandbox import SandboxPlan, landlock, wrap


async def _once(argv: list[str], env: dict[str, str | None], confine: Callable[[], None] | None) -> float:
    # as a session spawns it: bubblewrap sets its own parent-death signal (no setpriv in front)
    bwrap = argv[0].endswith("bwrap")
    spec = ProcessSpec(key="bench", argv=argv, env=env, framing="raw", shutdown=5.0,
                       death_signal=None if bwrap else "SIGTERM")
    spawner = None if confine is None else functools.partial(spawn, confine=confine)
    started = time.perf_counter()
    async with open_child(spec, spawner=spawner) as child:
        status = await child.wait()
    elapsed = time.perf_counter() - started
    if not status.ok:
        raise RuntimeError(f"{argv[:3]} ended {status}")
    return elapsed


def _paths(work: Path) -> dict[str, Callable[[], Awaitable[float]]]:
    plan = SandboxPlan(cwd=work, writable=(work,))
    true = ["/bin/true"]
    bwrap_argv, bwrap_env = wrap(true, {}, plan)
    netns_argv, netns_env = wrap(true, {}, SandboxPlan(cwd=work, writable=(work,), net="off"))
    paths: dict[str, Callable[[], Awaitable[float]]] = {
        "plain": functools.partial(_once, true, {}, None),
        "bwrap": functools.partial(_once, bwrap_argv, bwrap_env, None),
        "bwrap+netns": functools.partial(_once, netns_argv, netns_env, None),
    }
    if landlock.abi() >= 1:
        lplan = SandboxPlan(cwd=work, writable=(work,), tmp=False)
        # a ruleset per spawn, as a session builds one per child
        paths["landlock"] = lambda: _once(true, {}, landlock.preexec_hook(lplan))
    return paths


def _raw(work: Path, rounds: int) -> dict[str, list[float]]:
    """The same confinements through ``subprocess.run``: the floor without corral's child API."""
    argvs = {"plain": (["/bin/true"], None),
             "bwrap": (wrap(["/bin/true"], {}, SandboxPlan(cwd=work, writable=(work,)))[0], None),
             "bwrap+netns": (wrap(["/bin/true"], {}, SandboxPlan(cwd=work, writable=(work,), net="off"))[0], None)}
    times: dict[str, list[float]] = {name: [] for name in argvs}
    lplan = SandboxPlan(cwd=work, writable=(work,), tmp=False) if landlock.abi() >= 1 else None
    if lplan is not None:
        times["landlock"] = []
    for _ in range(rounds):
        for name, (argv, _) in argvs.items():
            started = time.perf_counter()
            subprocess.run(argv, check=True)
            times[name].append(time.perf_counter() - started)
        if lplan is not None:
            started = time.perf_counter()
            subprocess.run(["/bin/true"], check=True, preexec_fn=landlock.preexec_hook(lplan))
            times["landlock"].append(time.perf_counter() - started)
    return times


def _print(title: str, times: dict[str, list[float]]) -> None:
    plain = statistics.median(times["plain"])
    print(title)
    for name, values in times.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"  {name:12s} {median * 1e3:7.2f} ms  p90 {p90 * 1e3:7.2f} ms  "
              f"extra {(median - plain) * 1e3:+6.2f} ms   (goal: <= +5 ms)")


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        paths = _paths(Path(directory))
        times: dict[str, list[float]] = {name: [] for name in paths}
        for name, run in paths.items():  # warm-up
            await run()
        for _ in range(rounds):
            for name, run in paths.items():
                times[name].append(await run())
        raw = _raw(Path(directory), rounds)
    _print(f"spawn of /bin/true through open_child, {rounds} interleaved rounds (median, p90; extra over plain)",
           times)
    _print("the same argvs through subprocess.run (no corral in between)", raw)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    trio.run(main, parser.parse_args().rounds)
