"""The compaction planner: elide then drop, oldest first; what it never touches; replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from actors.native.compaction import (
    ELIDED, Calibration, CompactionConfig, Decision, Drop, Elide, Entry, Sidecar, SidecarState, Summary,
    compact, entries, replay, turns,
)
from actors.native.compaction.plan import SUMMARY_PREFIX


def prompt(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def call(cid: str, name: str = "read") -> dict[str, Any]:
    return {"role": "model", "parts": [{"function_call": {"id": cid, "name": name,
                                                          "args": {"path": cid}}}]}


def response(cid: str, name: str = "read", size: int = 400) -> dict[str, Any]:
    return {"role": "user", "parts": [{"function_response": {
        "id": cid, "name": name, "response": {"output": "x" * size}}}]}


def say(text: str) -> dict[str, Any]:
    return {"role": "model", "parts": [{"text": text}]}


def conversation(n: int, name: str = "read") -> list[dict[str, Any]]:
    """``n`` turns: prompt, a tool call and its (large) response, an answer."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        out += [prompt(f"task {i}"), call(f"c{i}", name), response(f"c{i}", name), say(f"done {i}")]
    return out


def config(**kw: Any) -> CompactionConfig:
    return CompactionConfig(**{"context_tokens": 1000, "keep_recent_turns": 1, **kw})


def bodies(items: list[Entry]) -> dict[str, Any]:
    return {p["function_response"]["id"]: p["function_response"]["response"]
            for e in items for p in e.data["parts"] if "function_response" in p}


def ids(items: list[Entry], key: str) -> list[str]:
    return [p[key]["id"] for e in items for p in e.data["parts"] if key in p]


def total(items: list[Entry]) -> int:
    return sum(e.tokens for e in items)


def test_turns_start_at_prompts_and_function_responses_do_not_start_one() -> None:
    items = entries([say("preamble"), *conversation(2)])
    assert turns(items) == [range(0, 1), range(1, 5), range(5, 9)]


def test_elides_oldest_first_keeping_ids_names_and_pairs_and_stops_at_the_target() -> None:
    items = entries(conversation(6))
    before = total(items)
    # Eliding one 400-byte body saves about 100 tokens; ask for just under two of them.
    target = before - 150
    outcome = compact(items, fixed=0, config=config(context_tokens=target * 2, target=0.5),
                      calibration=Calibration())
    assert outcome.elided == ["c0", "c1"]
    assert all(isinstance(d, Elide) for d in outcome.decisions)
    after = bodies(outcome.entries)
    assert after["c0"] == after["c1"] == {"output": ELIDED}
    assert after["c2"] == {"output": "x" * 400}
    assert ids(outcome.entries, "function_call") == ids(outcome.entries, "function_response") \
        == [f"c{i}" for i in range(6)]
    assert outcome.tokens_before == before and outcome.tokens_after == total(outcome.entries)
    assert outcome.tokens_after <= target and not outcome.dropped


def test_then_drops_oldest_whole_turns_keeping_the_first_content() -> None:
    items = entries(conversation(6))
    outcome = compact(items, fixed=0, config=config(context_tokens=200, target=1.0),
                      calibration=Calibration())
    # All eligible bodies are elided, then turns go: turn 0 keeps its prompt (content 0).
    assert outcome.entries[0].data == prompt("task 0")
    elided = {"function_response": {"id": "c0", "name": "read", "response": {"output": ELIDED}}}
    assert outcome.dropped[0] == [call("c0"), {"role": "user", "parts": [elided]}, say("done 0")]
    assert len(outcome.dropped) == 4 and outcome.exhausted  # turns 0-3: 4 is recent, 5 active
    assert len([d for d in outcome.decisions if isinstance(d, Drop)]) == 4


def test_the_active_turn_and_the_recent_window_are_never_touched() -> None:
    contents = conversation(8)
    outcome = compact(entries(contents), fixed=0,
                      config=config(context_tokens=10, keep_recent_turns=3),
                      calibration=Calibration())
    assert outcome.exhausted
    kept = [e.data for e in outcome.entries]
    assert kept[-16:] == contents[-16:]  # the last four turns: three recent, one active
    assert kept[0] == contents[0]
    assert len(kept) == 17


def test_protected_tools_are_neither_elided_nor_dropped() -> None:
    contents = conversation(3, name="memory") + conversation(3)[4:]
    outcome = compact(entries(contents), fixed=0,
                      config=config(context_tokens=10, protected_tools=["memory"]),
                      calibration=Calibration())
    after = bodies(outcome.entries)
    assert after["c0"] == after["c1"] == {"output": "x" * 400}
    assert outcome.elided == []
    assert [e.data for e in outcome.entries][:12] == contents[:12]


def test_a_turn_whose_removal_would_split_a_pair_is_kept() -> None:
    # A prompt steered in between a call and its response: turn 0 holds the call, turn 1 the
    # response. Neither can go alone; turn 2 (self-contained) can.
    contents = [prompt("a"), call("c0"), prompt("steer"), response("c0"), say("ok"),
                *conversation(4)[4:]]
    outcome = compact(entries(contents), fixed=0, config=config(context_tokens=10),
                      calibration=Calibration())
    kept = [e.data for e in outcome.entries]
    assert kept[:4] == [prompt("a"), call("c0"), prompt("steer"),
                        {**response("c0"), "parts": [{"function_response": {
                            "id": "c0", "name": "read", "response": {"output": ELIDED}}}]}]
    assert len(outcome.dropped) == 1 and outcome.dropped[0][0] == prompt("task 1")
    assert ids(outcome.entries, "function_call") == ids(outcome.entries, "function_response")


def test_the_calibration_factor_scales_the_estimate() -> None:
    items = entries(conversation(4))
    raw = total(items) + 100
    outcome = compact(items, fixed=100, config=config(context_tokens=10 ** 6),
                      calibration=Calibration(2.0))
    assert outcome.tokens_before == raw * 2 and outcome.decisions == []


def test_replay_reproduces_the_outcome_and_repeats_identical_decisions() -> None:
    # Turns 0 and 1 are byte-identical: two decisions with the same key, one occurrence each.
    contents = [prompt("t"), call("c"), response("c"), say("d")] * 2 + conversation(3)[4:]
    outcome = compact(entries(contents), fixed=0, config=config(context_tokens=60, target=1.0),
                      calibration=Calibration())
    elides = [d for d in outcome.decisions if isinstance(d, Elide)]
    assert elides[0] == elides[1]
    again = replay(entries(contents), outcome.decisions)
    assert [e.data for e in again] == [e.data for e in outcome.entries]
    # A decision whose target is gone is skipped; the rest still apply.
    # and the active turn is never touched, even by an old decision that matches it.
    assert [e.data for e in replay(entries(contents[:4]), outcome.decisions)] == contents[:4]


def test_a_summary_replaces_the_turns_it_covers_where_the_first_was() -> None:
    contents = conversation(4)
    outcome = compact(entries(contents), fixed=0, config=config(context_tokens=10),
                      calibration=Calibration())
    keys = [d.key for d in outcome.decisions if isinstance(d, Drop)]
    decisions: list[Decision] = [*(d for d in outcome.decisions if isinstance(d, Elide)),
                 Summary(keys=keys, text="we read c0..c1")]
    result = [e.data for e in replay(entries(contents), decisions)]
    assert result[0] == prompt("task 0")
    assert result[1] == prompt(SUMMARY_PREFIX + "we read c0..c1")
    assert result[2:] == contents[8:]


def test_sidecar_round_trip_and_a_bad_file_warns_once(tmp_path: Path) -> None:
    sidecar = Sidecar(tmp_path, "n-1")
    sidecar.state = SidecarState(factor=1.5, decisions=[Elide(key="a"), Drop(key="b"),
                                                        Summary(keys=["c"], text="s")])
    sidecar.save()
    loaded = Sidecar(tmp_path, "n-1").load()
    assert loaded.factor == 1.5 and loaded.decisions == sidecar.state.decisions
    assert b'"version":1' in sidecar.path.read_bytes()
    sidecar.path.write_bytes(b'{"version": 2, "decisions": []}')
    fresh = Sidecar(tmp_path, "n-1")
    assert fresh.load() == SidecarState() and fresh.warning is not None
    sidecar.path.write_bytes(b"garbage")
    broken = Sidecar(tmp_path, "n-1")
    broken.load()
    first = broken.warning
    broken.path.chmod(0o000)
    broken.load()
    assert broken.warning == first


def test_a_summary_is_never_dropped_or_summarised_again() -> None:
    contents = conversation(5)
    outcome = compact(entries(contents), fixed=0, config=config(context_tokens=10),
                      calibration=Calibration())
    keys = [d.key for d in outcome.decisions if isinstance(d, Drop)]
    elides: list[Decision] = [d for d in outcome.decisions if isinstance(d, Elide)]
    items = replay(entries(contents), [*elides, Summary(keys=keys, text="s")])
    again = compact(items, fixed=0, config=config(context_tokens=10), calibration=Calibration())
    assert again.dropped == [] and again.exhausted
    assert again.entries[1].data == prompt(SUMMARY_PREFIX + "s")
