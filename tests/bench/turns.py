"""What the per-turn benchmarks share: the command line, the daemons, the turn loop and the report.

Every turn benchmark drives the same scripted turns on several *paths*: ``direct`` (the vendor
CLI driven by our translator in the benchmark's own process: the floor), ``corral`` (a daemon
run from this tree) and, with ``--baseline DIR``, ``baseline`` (a daemon run from another source
tree, e.g. ``git worktree add /tmp/base HEAD~3``), so a change is measured against the code
before it back to back, under the same machine load. The paths take turns of the same shape in
rounds; the order rotates every round, so no path always runs in the wake of another (Claude
writes its transcript some 50 ms after a turn ends). The machine is shared and noisy, so the
figure that matters is the *paired* difference: turn k through a daemon minus turn k direct
(same round, same load), reported as a median and a p90 over many rounds, with a bootstrap interval for the median.

A vendor CLI's own turn time varies by tens of ms from turn to turn (OpenCode: 210–300 ms), so
for a slow agent even hundreds of paired rounds leave the paired median some ms wide. Each daemon
path therefore also reports its **edges**: per turn, the client's round trip minus the child's
span as the daemon logged it (its ``user`` event, appended just before the prompt is written to
the child, to its ``result``). That is what the daemon adds at the turn's two ends (request,
session loop, log, stdin; stdout, translation, log, websocket) with the vendor's time taken out.
It does not cover round trips the daemon answers in the middle of a turn; the paired figure does.
Last, the CPU time per turn of each daemon and of each path's vendor CLI (with what it ran): equal
agent CPU on both paths with a slower turn through corral means the agent waited for a core
(on a small machine a busy agent and the daemon's own CPU share the cores), not that it did more.
The wire's timestamps have millisecond resolution, so one turn's edges are ±1 ms; their median
over many turns is not.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import msgspec
import psutil
import trio

from protocol.events import Event, Result
from tests.bench.midturn import answers
from tests.e2e.daemonproc import DaemonProc, RawClient, start_daemon, stop_daemon

Turn = Callable[[str], Awaitable[float | None]]
"""One turn on one path: send ``prompt``, return once its ``result`` arrived; a daemon path
returns the turn's edges (ms, see the module docstring), the direct path None."""


class LiveChild(Protocol):
    """A vendor CLI driven by its translator in this process (the tests' ``Live*`` rigs)."""

    events: list[Event]

    async def call(self, name: str, *args: Any) -> Any: ...

    async def wait_for(self, predicate: Callable[[Event], bool], start: int = 0) -> Event: ...


def direct_turn(live: LiveChild) -> Turn:
    """A turn on the ``direct`` path: prompt ``live`` and wait for its ``result``."""
    async def turn(text: str) -> None:
        start = len(live.events)
        await live.call("prompt", text)
        result = await live.wait_for(lambda e: isinstance(e, Result), start)
        if not isinstance(result, Result) or result.is_error:
            raise RuntimeError(f"direct turn failed: {result}")
    return turn


def corral_turn(client: RawClient, sid: str) -> Turn:
    """A turn through a daemon: prompt session ``sid``, read its events up to ``result``, and
    return the turn's edges (the round trip minus the span from ``user`` to ``result``)."""
    async def turn(text: str) -> float:
        sent = time.time()
        delivery = (await client.ok("session.prompt", session_id=sid, text=text))["delivery"]
        if delivery != "prompted":
            raise RuntimeError(f"corral turn was {delivery}, not prompted")
        frames = await client.events_until(
            sid, lambda f: f.get("type") == "event" and f["event"]["type"] == "result", 120)
        received = time.time()
        result = frames[-1]
        if result["event"]["is_error"]:
            raise RuntimeError(f"corral turn failed: {result['event']}")
        user = next(f for f in frames if f["event"]["type"] == "user" and f["event"]["text"] == text)
        return (received - sent - (_epoch(result["ts"]) - _epoch(user["ts"]))) * 1000
    return turn


def _epoch(ts: str) -> float:
    """A wire timestamp (``2026-12-03T22:30:00.123Z``) as seconds since the epoch."""
    return datetime.datetime.fromisoformat(ts).timestamp()

_RUNNING: dict[str, psutil.Process] = {}
"""The daemon of each daemon path while ``daemons`` runs: ``measure`` reads their CPU time."""
_LOG_FRAMES = [False]
"""Whether ``--frames`` was given (``bench_of`` sets it, ``frame_log`` reads it)."""
_FRAME_LOGS: dict[str, Path] = {}
"""With ``--frames``, each daemon path's frame log (``frame_log``)."""
_ANSWERS: dict[str, dict[str, tuple[int, dict[str, list[float]]]]] = {}
"""Per turn shape, each daemon path's counted turns and its mid-turn answer times (ms)."""
_EDGES: dict[str, dict[str, list[float]]] = {}
"""Per turn shape, the edges (ms) of each daemon path's counted turns (``corral_turn``)."""
_CPU: dict[str, dict[str, float]] = {}
"""Per turn shape, the CPU each daemon spent per turn of that shape (ms, warm-up turns included)."""
_AGENT_CPU: dict[str, dict[str, float]] = {}
"""Per turn shape, the CPU each path's vendor CLI (and what it ran) spent per turn (ms)."""


class Bench(msgspec.Struct, frozen=True, kw_only=True):
    """The command line: counted and warm-up turns per shape and path, and the baseline tree."""

    count: int
    warmup: int
    baseline: Path | None = None
    frames: bool = False

    @property
    def daemon_paths(self) -> tuple[str, ...]:
        """The paths that run through a daemon: ``corral``, then ``baseline`` if asked for."""
        return ("corral", "baseline") if self.baseline is not None else ("corral",)

    @property
    def paths(self) -> int:
        """How many paths take each turn (the model script holds one reply set per path)."""
        return 1 + len(self.daemon_paths)


async def read_port_line(process: trio.Process, server: str) -> bytes:
    """The first line a fake server prints (it carries its port)."""
    if process.stdout is None:
        raise RuntimeError(f"the fake {server} server has no stdout pipe")
    line = b""
    while not line.endswith(b"\n"):
        chunk = await process.stdout.receive_some(64)
        if not chunk:
            raise RuntimeError(f"the fake {server} server exited before printing its port")
        line += chunk
    return line


@asynccontextmanager
async def daemons(bench: Bench, root: Path) -> AsyncIterator[dict[str, DaemonProc]]:
    """A running daemon per daemon path (state under ``root/<path>/state``), stopped on the way out."""
    running: dict[str, DaemonProc] = {}
    try:
        for name in bench.daemon_paths:
            source = bench.baseline if name == "baseline" else None
            running[name] = await start_daemon(root / name / "state", source=source)
            _RUNNING[name] = psutil.Process(running[name].process.pid)
        yield running
    finally:
        _RUNNING.clear()
        with trio.CancelScope(shield=True):
            for daemon in running.values():
                await stop_daemon(daemon)


async def measure(turns: dict[str, Turn], shape: str, count: int, warmup: int) -> dict[str, list[float]]:
    """Run ``warmup + count`` rounds of ``shape``, one turn per path each; times in ms.

    The order of the paths rotates every round (see the module docstring). The edges of each
    daemon path's turns are kept for ``report`` (``_EDGES``).
    """
    names = list(turns)
    times: dict[str, list[float]] = {name: [] for name in names}
    edges: dict[str, list[float]] = {name: [] for name in names}
    before = {name: _cpu_seconds(proc) for name, proc in _RUNNING.items()}
    agents = _agents()
    agents_before = {name: _tree_cpu(roots) for name, roots in agents.items()}
    logs = dict(_FRAME_LOGS)
    offsets: dict[str, int] = {}
    for n in range(warmup + count):
        if n == warmup:
            offsets = {name: _size(path) for name, path in logs.items()}
        k = n % len(names)
        for name in names[k:] + names[:k]:
            started = time.perf_counter()
            edge = await turns[name](f"{shape} turn {n}")
            if n >= warmup:
                times[name].append((time.perf_counter() - started) * 1000)
                if edge is not None:
                    edges[name].append(edge)
    _EDGES[shape] = {name: values for name, values in edges.items() if values}
    _ANSWERS[shape] = {name: (count, answers(_read_from(path, offsets.get(name, 0)).splitlines()))
                       for name, path in logs.items()}
    _CPU[shape] = {name: (_cpu_seconds(proc) - before[name]) * 1000 / (warmup + count)
                   for name, proc in _RUNNING.items()}
    _AGENT_CPU[shape] = {name: (_tree_cpu(roots) - agents_before[name]) * 1000 / (warmup + count)
                         for name, roots in agents.items()}
    return times


def _agents() -> dict[str, list[psutil.Process]]:
    """Per path, the vendor CLI processes it drives: a daemon's children, and for ``direct``
    this process's children that are neither a daemon nor a fake server."""
    found: dict[str, list[psutil.Process]] = {name: proc.children() for name, proc in _RUNNING.items()}
    daemons = {proc.pid for proc in _RUNNING.values()}
    found["direct"] = [child for child in psutil.Process().children() if child.pid not in daemons
                       and not any("tests.fakes" in part for part in _cmdline(child))]
    return found


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def _tree_cpu(roots: list[psutil.Process]) -> float:
    """CPU seconds of ``roots``, their reaped children and their live descendants."""
    total = 0.0
    for root in roots:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        for proc in procs:
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system + times.children_user + times.children_system
    return total


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _read_from(path: Path, offset: int) -> bytes:
    """``path`` from ``offset`` to its last whole line (the daemon may be writing the next)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    return data[:data.rfind(b"\n") + 1]


def _cpu_seconds(proc: psutil.Process) -> float:
    """CPU time of ``proc`` so far, in seconds (``cpu_ns``)."""
    return cpu_ns(proc.pid) / 1e9


def cpu_ns(pid: int) -> int:
    """CPU time of every thread of ``pid`` so far, in ns: the scheduler's own account
    (``/proc/<pid>/task/*/schedstat``). ``cpu_times`` is sampled at timer ticks, which
    over-charges a process woken by the tick itself, as one fed a trickle of events is."""
    return _schedstat(pid, 0)


def wait_ns(pid: int) -> int:
    """Time every thread of ``pid`` spent runnable but waiting for a CPU so far, in ns (the
    scheduler's run-queue delay): what the load of the machine cost it."""
    return _schedstat(pid, 1)


def _schedstat(pid: int, field: int) -> int:
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as handle:
                total += int(handle.read().split()[field])
        except OSError:
            pass  # a thread that ended meanwhile
    return total


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def median_interval(values: list[float], rounds: int = 2000) -> tuple[float, float]:
    """A 95 % bootstrap interval for the median of ``values`` (seeded, so a rerun on the same
    figures prints the same interval): how far the printed median could move on another run of
    the same length. A target is met only when the interval's top is under it."""
    draw = random.Random(0)
    medians = sorted(statistics.median(draw.choices(values, k=len(values))) for _ in range(rounds))
    return medians[round(0.025 * (rounds - 1))], medians[round(0.975 * (rounds - 1))]


def report(shape: str, times: dict[str, list[float]]) -> None:
    """Per turn shape: each path's median and p90; for each daemon path what it adds to
    ``direct`` (difference of the medians, and median and p90 of the paired differences); with
    a baseline, the paired difference between ``corral`` and ``baseline``."""
    direct = times["direct"]
    med_d = statistics.median(direct)
    print(f"{shape:>5} turn (n={len(direct)})  direct  median {med_d:7.1f} ms  p90 {percentile(direct, 0.9):7.1f} ms")
    for name, path in times.items():
        if name == "direct":
            continue
        med = statistics.median(path)
        paired = [c - d for c, d in zip(path, direct)]
        low, high = median_interval(paired)
        print(f"{'':>17}{name:>8}  median {med:7.1f} ms  p90 {percentile(path, 0.9):7.1f} ms"
              f"   added: median {med - med_d:+6.1f} ms ({(med / med_d - 1) * 100:+.1f}%)"
              f"   paired median {statistics.median(paired):+6.1f} ms [95% {low:+.1f} .. {high:+.1f}]"
              f"  p90 {percentile(paired, 0.9):+6.1f} ms")
    if "baseline" in times:
        paired = [c - b for c, b in zip(times["corral"], times["baseline"])]
        low, high = median_interval(paired)
        print(f"{'':>17}corral - baseline: paired median {statistics.median(paired):+6.1f} ms"
              f" [95% {low:+.1f} .. {high:+.1f}]  p90 {percentile(paired, 0.9):+6.1f} ms")
    for name, values in _EDGES.get(shape, {}).items():
        low, high = median_interval(values)
        print(f"{'':>17}{name:>8}  edges (round trip minus the child's span): median"
              f" {statistics.median(values):5.2f} ms [95% {low:.2f} .. {high:.2f}]  p90 {percentile(values, 0.9):5.2f} ms")
    for name, (turns, waits) in _ANSWERS.get(shape, {}).items():
        if not waits:
            print(f"{'':>17}{name:>8}  mid-turn: no request from the child was answered")
        for method, values in sorted(waits.items()):
            print(f"{'':>17}{name:>8}  mid-turn {method}: {len(values) / turns:.1f} per turn, read to"
                  f" answered mean {statistics.fmean(values):.2f} ms  median {statistics.median(values):.0f} ms"
                  f"  max {max(values):.0f} ms")
    if _CPU.get(shape):
        spent = "   ".join(f"{name} {ms:.1f} ms" for name, ms in _CPU[shape].items())
        print(f"{'':>17}daemon CPU per turn: {spent}")
    if _AGENT_CPU.get(shape):
        spent = "   ".join(f"{name} {ms:.1f} ms" for name, ms in _AGENT_CPU[shape].items())
        print(f"{'':>17}vendor CLI CPU per turn: {spent}")


def arguments(doc: str | None) -> argparse.ArgumentParser:
    """The shared command line (a benchmark may add its own arguments before parsing)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--turns", type=int, default=40, help="counted turns per shape and path")
    parser.add_argument("--warmup", type=int, default=2, help="uncounted turns per shape first")
    parser.add_argument("--baseline", type=Path, default=None, metavar="DIR",
                        help="also run a daemon from the source tree DIR (a path of its own)")
    parser.add_argument("--frames", action="store_true",
                        help="log the daemon sessions' frames and time the round trips they answer "
                             "in the middle of a turn (tests.bench.midturn)")
    return parser


def bench_of(args: argparse.Namespace) -> Bench:
    baseline = args.baseline.resolve() if args.baseline is not None else None
    _FRAME_LOGS.clear()
    _LOG_FRAMES[:] = [args.frames]
    return Bench(count=args.turns, warmup=args.warmup, baseline=baseline, frames=args.frames)


def frame_log(root: Path) -> dict[str, str]:
    """The session options of daemon path ``root.name``: its frame log under ``root`` with
    ``--frames`` (``tests.bench.midturn``), else none."""
    if not _LOG_FRAMES[0]:
        return {}
    root.mkdir(parents=True, exist_ok=True)
    _FRAME_LOGS[root.name] = root / "frames.ndjson"
    return {"log_path": str(_FRAME_LOGS[root.name])}


def run(main: Callable[[Bench], Awaitable[None]], doc: str | None) -> None:
    """The command line of a turn benchmark (``arguments``), then ``main``."""
    trio.run(main, bench_of(arguments(doc).parse_args()))
