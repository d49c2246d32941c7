"""What the per-turn benchmarks share: reading a fake server's port, percentiles, the report."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Awaitable, Callable

import trio


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


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(shape: str, times: dict[str, list[float]]) -> None:
    """One line per turn shape: each path's median and p90, and what corral adds."""
    direct, corral = times["direct"], times["corral"]
    med_d, med_c = statistics.median(direct), statistics.median(corral)
    p90_d, p90_c = percentile(direct, 0.9), percentile(corral, 0.9)
    paired = statistics.median(c - d for c, d in zip(corral, direct))
    print(f"{shape:>5} turn (n={len(direct)})  direct median {med_d:7.1f} ms  p90 {p90_d:7.1f} ms"
          f"   corral median {med_c:7.1f} ms  p90 {p90_c:7.1f} ms"
          f"   overhead median {med_c - med_d:+6.1f} ms ({(med_c / med_d - 1) * 100:+.1f}%)"
          f"  p90 {p90_c - p90_d:+6.1f} ms   paired median {paired:+6.1f} ms")


def run(main: Callable[[int, int], Awaitable[None]], doc: str | None) -> None:
    """The command line of a turn benchmark: ``--turns`` and ``--warmup``, then ``main``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--turns", type=int, default=20, help="counted turns per shape and path")
    parser.add_argument("--warmup", type=int, default=2, help="uncounted turns per shape first")
    args = parser.parse_args()
    trio.run(main, args.turns, args.warmup)
