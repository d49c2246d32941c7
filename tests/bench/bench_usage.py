"""``usage.summary`` over a large state directory, next to the raw read of every log.

Run: ``python tests/bench/bench_usage.py [--sessions 1000] [--turns 100] [--dir PATH]``. Each
session's log is what a session writes (the frames ``EventLog`` encodes, byte for byte): per
turn a prompt, streamed assistant deltas, a tool call with output, a ``status`` and the
``result`` with its usage, over several days, harnesses and models (some reporting a cost,
some priced from the table, some unpriced). Printed, each the best of ``--repeat`` runs:

* the reference: reading every ``events.jsonl`` whole (bytes only, no parsing), warm cache;
* a cold summary: no usage index yet, every log scanned and every index written;
* a warm summary: the indexes in place and current (the target: under a second);
* a warm summary after a turn was appended to every tenth session (the indexes extended);
* for contrast, decoding every frame of every log as the daemon's replay does.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from actors.native.daemon.config import PRICES_FILE, load_prices  # noqa: E402
from actors.session.logfile import DECODER, LOG_NAME  # noqa: E402
from actors.session.meta import SessionMeta, write_meta  # noqa: E402
from actors.usage.index import INDEX_NAME  # noqa: E402
from actors.usage.report import summarise_state  # noqa: E402
from protocol.base import format_ts  # noqa: E402
from protocol.events import Assistant, Event, Init, Result, Status, Tool, Usage, User  # noqa: E402
from protocol.messages import EventFrame  # noqa: E402

HARNESSES = [("claude", "claude-sonnet-4-20250514", True), ("native", "openai/gpt-5-mini", True),
             ("codex", "gpt-5", False), ("gemini", "gemini-2.5-pro", False),
             ("fake", "local-model", False)]
DAY = 86400.0
START = 1_796_083_200.0  # 2026-12-01T00:00:00Z


def turn_events(n: int, model_cost: bool) -> list[Event]:
    usage = Usage(input_tokens=1200 + n, output_tokens=300, cache_read_tokens=5000, cache_write_tokens=100)
    return [
        User(text=f"please do step {n} of the plan", delivery="prompted"),
        *[Assistant(text="streamed words of an answer ", delta=True) for _ in range(8)],
        Tool(call_id=f"c{n}", name="bash", kind="exec", phase="started", input={"command": "ls -la"}),
        Tool(call_id=f"c{n}", name="bash", kind="exec", phase="completed", input={"command": "ls -la"},
             output="x" * 400),
        Status(state="idle"),
        Result(stop_reason="end_turn", usage=usage, cost_usd=0.0123 if model_cost else None,
               duration_ms=4321),
    ]


def write_state(root: Path, sessions: int, turns: int) -> int:
    encoder = msgspec.json.Encoder()
    total = 0
    for s in range(sessions):
        sid = f"s-{s:012x}"
        harness, model, costed = HARNESSES[s % len(HARNESSES)]
        directory = root / "sessions" / sid
        write_meta(directory, SessionMeta(id=sid, harness=harness, cwd="/w", model=model,
                                          created_at=format_ts(START), state="closed"))
        lines = []
        seq = 0
        t0 = START + (s % 14) * DAY
        for n, event in enumerate([Init(model=model)] + [e for t in range(turns) for e in turn_events(t, costed)]):
            seq += 1
            frame = EventFrame(session_id=sid, seq=seq, ts=format_ts(t0 + n * 2.0), event=event)
            lines.append(encoder.encode(frame))
        data = b"\n".join(lines) + b"\n"
        (directory / LOG_NAME).write_bytes(data)
        total += len(data)
    return total


def best(runs: int, call: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    prices, _ = load_prices((PRICES_FILE,))
    root = Path(tempfile.mkdtemp(prefix="corral-usage-bench-", dir=args.dir))
    try:
        started = time.perf_counter()
        size = write_state(root, args.sessions, args.turns)
        logs = sorted((root / "sessions").glob(f"*/{LOG_NAME}"))
        print(f"{args.sessions} sessions x {args.turns} turns: {size / 1e6:.1f} MB of logs, "
              f"{sum(1 for p in logs for _ in open(p, 'rb')):,} events "
              f"(written in {time.perf_counter() - started:.1f} s)")

        def summary() -> object:
            return summarise_state(root, prices, since=None, by="model", now=START + 30 * DAY)

        def drop_indexes() -> None:
            for path in (root / "sessions").glob(f"*/{INDEX_NAME}"):
                path.unlink()

        raw = best(args.repeat, lambda: [p.read_bytes() for p in logs])
        colds = []
        for _ in range(args.repeat):
            drop_indexes()
            colds.append(best(1, summary))
        warm = best(args.repeat, summary)
        result = summary()
        extended = []
        for r in range(args.repeat):
            for path in logs[:: 10]:
                frame = EventFrame(session_id=path.parent.name, seq=10**6 + r, ts=format_ts(START + 20 * DAY),
                                   event=Result(usage=Usage(input_tokens=1)))
                with open(path, "ab") as log:
                    log.write(msgspec.json.encode(frame) + b"\n")
            extended.append(best(1, summary))
        decode = best(1, lambda: [sum(1 for line in open(p, "rb") if DECODER.decode(line)) for p in logs])
        print(f"reference: read every log whole     {raw * 1000:8.1f} ms")
        print(f"summary, cold (indexes built)       {min(colds) * 1000:8.1f} ms  ({min(colds) / raw:.1f}x the raw read)")
        print(f"summary, warm (indexes current)     {warm * 1000:8.1f} ms  ({warm / raw:.2f}x the raw read)"
              f"  target < 1000 ms: {'met' if warm < 1.0 else 'MISSED'}")
        print(f"summary, warm, 1/10 logs appended   {min(extended) * 1000:8.1f} ms")
        print(f"contrast: decode every frame        {decode * 1000:8.1f} ms")
        totals = result.totals  # type: ignore[attr-defined]
        print(f"(totals: {totals.turns:,} turns, ${totals.cost_usd:,.2f} of which "
              f"${totals.estimated_cost_usd:,.2f} estimated, {totals.unpriced_turns:,} unpriced)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
