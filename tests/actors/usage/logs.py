"""Session directories written as the daemon writes them (``write_meta`` and a real ``EventLog``),
with events at chosen wall-clock times, and the hand-computed usage of a fixed set of them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from actors.session.eventlog import EventLog
from actors.session.meta import SessionMeta, write_meta
from protocol.events import Assistant, Event, Init, Result, Tool, Usage, User
from protocol.native import Price


def at(text: str) -> float:
    """Epoch seconds of a UTC ISO time."""
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp()


def write_session(root: Path, session_id: str, harness: str, model: str | None,
                  events: list[tuple[str, Event]], *, state: str = "closed") -> Path:
    """``root/sessions/<id>`` with its meta.json and an events.jsonl of ``events`` (time, event)."""
    directory = root / "sessions" / session_id
    write_meta(directory, SessionMeta(id=session_id, harness=harness, cwd="/w", model=model,
                                      created_at="2026-12-01T00:00:00.000Z", state=state))  # type: ignore[arg-type]
    append(directory, session_id, events)
    return directory


def append(directory: Path, session_id: str, events: list[tuple[str, Event]]) -> None:
    log, _ = EventLog.open(directory, session_id, durability="none")
    for when, event in events:
        log.append(event, now=at(when))
    log.close()


def result(when: str, *, cost: float | None = None, error: bool = False, i: int = 0, o: int = 0,
           cr: int = 0, cw: int = 0) -> tuple[str, Event]:
    return when, Result(stop_reason="end_turn", is_error=error, cost_usd=cost,
                        usage=Usage(input_tokens=i, output_tokens=o, cache_read_tokens=cr,
                                    cache_write_tokens=cw))


PRICES = {"m-priced": Price(input=2.0, output=10.0, cache_read=0.5)}
"""The test's price table: dollars per million tokens; cache writes billed as input."""

A, B, C, D = "s-00000000000a", "s-00000000000b", "s-00000000000c", "s-00000000000d"


def write_fixture(root: Path) -> None:
    """Four sessions of four harnesses over three UTC days (figures in ``EXPECTED_*``)."""
    # A: fake, no init; the meta's model is priced: estimated 1000*2 + 200*10 + 400*0.5 = $0.0042.
    # A tool's input holding what looks like a result is not a turn.
    write_session(root, A, "fake", "m-priced", [
        ("2026-12-01T09:59:00", User(text="hi")),
        ("2026-12-01T09:59:30", Tool(call_id="t1", name="echo",
                                     input={"event": {"type": "result", "usage": {"input_tokens": 9}}})),
        ("2026-12-01T09:59:40", Assistant(text='{"event":{"type":"result"}}')),
        result("2026-12-01T10:00:00", i=1000, o=200, cr=400),
        result("2026-12-02T09:00:00", error=True),  # no tokens: costs nothing, not unpriced
    ])
    # B: claude reports its own cost (never estimated).
    write_session(root, B, "claude", None, [
        ("2026-12-02T11:00:00", Init(model="claude-sonnet-4-20250514")),
        result("2026-12-02T12:00:00", cost=0.05, i=10, o=20),
        result("2026-12-03T00:00:01", cost=0.03, error=True),
    ], state="idle")
    # C: codex reports no cost and its model has no price: unpriced.
    write_session(root, C, "codex", "mystery-1", [
        ("2026-12-03T04:00:00", Init(model="openai/mystery-1")),
        result("2026-12-03T05:00:00", i=500, o=50),
    ])
    # D: native reports its cost; a turn without one is priced by its NAME (provider cut off):
    # (1000 + 200 cache writes billed as input) * 2 = $0.0024.
    write_session(root, D, "native", "openai/m-priced", [
        ("2026-12-01T23:00:00", Init(model="openai/m-priced")),
        result("2026-12-01T23:59:59.999", cost=0.001, i=100),
        result("2026-12-02T00:00:00", i=1000, cw=200),
    ])


def figures(turns: int, errors: int, i: int, o: int, cr: int, cw: int, cost: float, est: float,
            unpriced: int) -> dict[str, Any]:
    return {"turns": turns, "errors": errors, "input_tokens": i, "output_tokens": o,
            "cache_read_tokens": cr, "cache_write_tokens": cw, "cost_usd": cost,
            "estimated_cost_usd": est, "unpriced_turns": unpriced}


EXPECTED_TOTALS = figures(7, 2, 2610, 270, 400, 200, 0.0876, 0.0066, 1)
EXPECTED_BY = {
    "harness": {
        "claude": figures(2, 1, 10, 20, 0, 0, 0.08, 0.0, 0),
        "codex": figures(1, 0, 500, 50, 0, 0, 0.0, 0.0, 1),
        "fake": figures(2, 1, 1000, 200, 400, 0, 0.0042, 0.0042, 0),
        "native": figures(2, 0, 1100, 0, 0, 200, 0.0034, 0.0024, 0),
    },
    "model": {
        "claude-sonnet-4-20250514": figures(2, 1, 10, 20, 0, 0, 0.08, 0.0, 0),
        "m-priced": figures(2, 1, 1000, 200, 400, 0, 0.0042, 0.0042, 0),
        "openai/m-priced": figures(2, 0, 1100, 0, 0, 200, 0.0034, 0.0024, 0),
        "openai/mystery-1": figures(1, 0, 500, 50, 0, 0, 0.0, 0.0, 1),
    },
    "session": {
        A: figures(2, 1, 1000, 200, 400, 0, 0.0042, 0.0042, 0),
        B: figures(2, 1, 10, 20, 0, 0, 0.08, 0.0, 0),
        C: figures(1, 0, 500, 50, 0, 0, 0.0, 0.0, 1),
        D: figures(2, 0, 1100, 0, 0, 200, 0.0034, 0.0024, 0),
    },
    "day": {
        "2026-12-01": figures(2, 0, 1100, 200, 400, 0, 0.0052, 0.0042, 0),
        "2026-12-02": figures(3, 1, 1010, 20, 0, 200, 0.0524, 0.0024, 0),
        "2026-12-03": figures(2, 1, 500, 50, 0, 0, 0.03, 0.0, 1),
    },
}
