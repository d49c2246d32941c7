"""Event log appends per second in each durability mode, next to raw ``os.write`` of the same bytes.

Run: ``python tests/bench/bench_eventlog.py [--events N] [--dir PATH]``. The traffic is a
realistic turn shape: streamed assistant deltas, tool calls with some output, one ``result``
every ``--turn`` events. The log runs under trio with its flusher, yielding to the scheduler
every 32 appends as a session reading harness output would. The references write the very
bytes the log wrote (read back from its file) with ``os.write`` on an ``O_APPEND`` descriptor:
once with no fsync, once with an fsync per line (what ``event`` durability costs at minimum).
Replay throughput (``read_from`` from the memory tail and from the file) is printed too.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.session.eventlog import EventLog  # noqa: E402
from actors.session.logfile import Durability  # noqa: E402
from protocol.events import Assistant, Event, Result, Tool  # noqa: E402


def traffic(n: int, turn: int) -> list[Event]:
    events: list[Event] = []
    for i in range(n):
        if i % turn == turn - 1:
            events.append(Result(stop_reason="end_turn", duration_ms=1234))
        elif i % 10 == 9:
            events.append(Tool(call_id=f"c{i}", name="bash", kind="exec", phase="completed",
                               input={"command": "ls -la src"}, output="x" * 600))
        else:
            events.append(Assistant(text="streamed words of an answer " * 3, delta=True))
    return events


async def run_log(directory: Path, events: list[Event], durability: Durability) -> tuple[float, int]:
    log, _ = EventLog.open(directory, "s-bench", durability=durability)
    now = time.time()
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run_flusher)
        started = time.perf_counter()
        for i, event in enumerate(events):
            log.append(event, now=now)
            await log.commit()  # as the session does before it shows an event: fsyncs if due
            if i % 32 == 31:
                await trio.lowlevel.checkpoint()
        log.sync()
        elapsed = time.perf_counter() - started
        nursery.cancel_scope.cancel()
    fsyncs = log.statistics().fsyncs
    log.close()
    return elapsed, fsyncs


def raw_write(path: Path, lines: list[bytes], fsync_each: bool) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    started = time.perf_counter()
    for line in lines:
        os.write(fd, line)
        if fsync_each:
            os.fsync(fd)
    elapsed = time.perf_counter() - started
    os.close(fd)
    return elapsed


def replay(directory: Path, memory_tail: int) -> tuple[float, int]:
    log, _ = EventLog.open(directory, "s-bench", durability="none", memory_tail=memory_tail)
    started = time.perf_counter()
    count = sum(1 for _ in log.read_from(log.last_seq - min(log.last_seq, 2048) + 1))
    elapsed = time.perf_counter() - started
    log.close()
    return elapsed, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--event-mode-events", type=int, default=2_000, help="fewer: one fsync each")
    parser.add_argument("--turn", type=int, default=200, help="events per turn (one result each)")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: the temp dir)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-eventlog-") as tmp:
        root = Path(tmp)
        print(f"writing under {root} ({os.statvfs(root).f_bsize}-byte blocks)")
        print(f"{'what':<46} {'events':>8} {'seconds':>9} {'events/s':>12} {'MB/s':>8} {'fsyncs':>7}")
        modes: list[tuple[Durability, int]] = [
            ("none", args.events), ("turn", args.events), ("event", args.event_mode_events)
        ]
        for mode, n in modes:
            events = traffic(n, args.turn)
            directory = root / mode
            elapsed, fsyncs = trio.run(run_log, directory, events, mode)
            data = (directory / "events.jsonl").read_bytes()
            lines = [line + b"\n" for line in data.splitlines()]
            _row(f"EventLog.append durability={mode}", n, elapsed, len(data), fsyncs)
            _row("  reference: raw os.write, same bytes", n, raw_write(root / f"raw-{mode}", lines, False), len(data), 0)
            if mode == "event":
                reference = raw_write(root / "raw-fsync", lines, True)
                _row("  reference: raw os.write + fsync each", n, reference, len(data), n)
        for memory_tail, what in ((2048, "memory tail"), (0, "file")):
            elapsed, count = replay(root / "none", memory_tail)
            _row(f"read_from, last {count} events, from {what}", count, elapsed, None, None)


def _row(what: str, n: int, seconds: float, size: int | None, fsyncs: int | None) -> None:
    rate = n / seconds if seconds else float("inf")
    mb = f"{size / seconds / 1e6:8.1f}" if size is not None and seconds else f"{'':>8}"
    fs = f"{fsyncs:>7}" if fsyncs is not None else f"{'':>7}"
    print(f"{what:<46} {n:>8} {seconds:>9.3f} {rate:>12,.0f} {mb} {fs}")


if __name__ == "__main__":
    main()
