"""The Claude translator over frames recorded from Claude Code 2.1.197 (see ``record.py``), and over
hand-written frames for the paths a recording cannot reach. Synchronous, byte-level, no process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.harness import HarnessRequest, Output, Send
from actors.vendors.claude.translate import DENY_MESSAGE, ClaudeTranslator
from protocol.events import (
    Assistant,
    Error,
    Event,
    Init,
    Permission,
    Result,
    Thought,
    Tool,
    Usage,
)
from tests.actors.vendors.claude.live import uuids

RECORDINGS = Path(__file__).parent / "recordings"
REQUEST = HarnessRequest(session_id="s-1", cwd="/w", work_dir="/run")


class Replay(msgspec.Struct):
    """What a recording produced when fed to a fresh translator."""

    events: list[Event]
    sent: list[str]
    recorded: list[str]
    translator: ClaudeTranslator


def replay(name: str) -> Replay:
    """Feed the recorded CLI lines and calls to a new translator, as the live run did."""
    lines = [json.loads(line) for line in (RECORDINGS / f"{name}.ndjson").read_text().splitlines()]
    header = lines[0]
    assert header["dir"] == "meta" and header["claude_version"].startswith("2.1.197")
    request = msgspec.convert(header["request"], HarnessRequest)
    translator = ClaudeTranslator(request, new_uuid=uuids(header["uuid_base"]))
    events: list[Event] = []
    sent: list[str] = []

    def take(outputs: list[Output] | None) -> None:
        for out in outputs or []:
            if isinstance(out, Send):
                sent.append(out.data.removesuffix(b"\n").decode())
            else:
                events.append(out)

    take(translator.start(0.0))
    for entry in lines[1:]:
        if entry["dir"] == "call":
            take(getattr(translator, entry["call"])(**entry["args"], now=0.0))
        elif entry["dir"] == "recv":
            take(translator.receive(entry["raw"].encode(), 0.0))
    recorded = [entry["raw"] for entry in lines if entry["dir"] == "send"]
    return Replay(events=events, sent=sent, recorded=recorded, translator=translator)


def _of(events: list[Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def _text(events: list[Event], kind: type = Assistant) -> str:
    return "".join(e.text for e in _of(events, kind))


@pytest.mark.parametrize("name", sorted(p.stem for p in RECORDINGS.glob("*.ndjson")))
def test_replay_sends_the_recorded_bytes(name: str) -> None:
    run = replay(name)
    assert run.sent == run.recorded
    assert run.translator.ready


def test_text_turn_streams_thoughts_and_text_once() -> None:
    run = replay("text_turn")
    assert _text(run.events, Thought) == "The user wants a greeting."
    assert _text(run.events) == "Hello there, friend!Again: hello."
    assert all(e.delta for e in _of(run.events, Assistant) + _of(run.events, Thought))
    inits = _of(run.events, Init)
    assert len(inits) == 1  # the CLI repeats system/init every turn
    assert inits[0].model == "claude-opus-4-8[1m]" and "Bash" in inits[0].tools
    assert inits[0].vendor_session_id == run.translator.vendor_session_id
    results = _of(run.events, Result)
    assert [(r.stop_reason, r.is_error) for r in results] == [("end_turn", False)] * 2
    assert results[0].usage == Usage(input_tokens=25, output_tokens=7)
    # total_cost_usd is cumulative per process: each turn gets its own share.
    assert results[0].cost_usd == pytest.approx(0.0003) and results[1].cost_usd == pytest.approx(0.0003)
    assert isinstance(run.events[-1], Result)


def test_bash_allow_is_a_tool_with_a_permission_between_its_phases() -> None:
    run = replay("bash_allow")
    kinds = [type(e).__name__ for e in run.events if not isinstance(e, Assistant)]
    assert kinds == ["Init", "Tool", "Permission", "Tool", "Result"]
    started, completed = _of(run.events, Tool)
    ask = _of(run.events, Permission)[0]
    assert (ask.tool, ask.kind, ask.options) == ("Bash", "exec", ["allow", "deny", "allow_always"])
    assert ask.input == {"command": "echo made > made.txt", "description": "run a command"}
    assert started.call_id == completed.call_id and started.phase == "started" and completed.phase == "completed"
    assert completed.output == "(Bash completed with no output)" and not completed.is_error
    allow = json.loads(run.sent[2])
    assert allow == {"type": "control_response", "response": {
        "subtype": "success", "request_id": ask.permission_id,
        "response": {"behavior": "allow", "updatedInput": ask.input}}}
    assert _of(run.events, Result)[0].usage.input_tokens == 50


def test_bash_deny_reaches_the_model_as_a_tool_error() -> None:
    run = replay("bash_deny")
    denied = _of(run.events, Tool)[1]
    assert (denied.is_error, denied.output) == (True, DENY_MESSAGE)
    assert json.loads(run.sent[2])["response"]["response"] == {"behavior": "deny", "message": DENY_MESSAGE}
    assert _text(run.events) == "I will not delete anything."


def test_allow_always_sends_session_scoped_rules_and_is_not_asked_again() -> None:
    run = replay("allow_always")
    answer = json.loads(run.sent[2])["response"]["response"]
    assert answer["behavior"] == "allow"
    rules = answer["updatedPermissions"]
    assert rules and all(r["destination"] == "session" for r in rules)
    assert all(r["type"] in ("addRules", "addDirectories") for r in rules)
    assert len(_of(run.events, Permission)) == 1 and len(_of(run.events, Tool)) == 4


def test_interrupt_mid_stream_ends_the_turn_as_interrupted_and_the_process_goes_on() -> None:
    run = replay("interrupt_stream")
    assert json.loads(run.sent[2]) == {"type": "control_request", "request_id": "corral_2",
                                       "request": {"subtype": "interrupt"}}
    first, second = _of(run.events, Result)
    assert (first.stop_reason, first.is_error) == ("interrupted", False)
    assert (second.stop_reason, second.is_error) == ("end_turn", False)
    assert _of(run.events, Error) == []
    assert _text(run.events) == "Once upodone"  # the partial block is not repeated


def test_interrupt_with_an_open_permission_withdraws_it() -> None:
    run = replay("interrupt_permission")
    started, completed = _of(run.events, Tool)
    assert completed.is_error and "doesn't want to proceed" in completed.output
    assert [r.stop_reason for r in _of(run.events, Result)] == ["interrupted", "end_turn"]
    # The late decision for the withdrawn request sends nothing (sent == recorded covers it).
    assert not any('"behavior"' in line for line in run.sent)


def test_steer_at_a_tool_boundary_joins_the_turn() -> None:
    run = replay("steer_tool")
    assert len(_of(run.events, Result)) == 1
    assert json.loads(run.sent[2])["message"]["content"] == "also say which file you made"


def test_steer_after_the_last_model_call_is_folded_into_one_result() -> None:
    run = replay("steer_followup")
    results = _of(run.events, Result)
    assert len(results) == 1  # the CLI ran the steer as a second turn; the session sees one
    assert results[0].usage == Usage(input_tokens=50, output_tokens=14)
    assert results[0].cost_usd == pytest.approx(0.0006)
    assert _text(run.events) == "one, two, three, four, fiveBye!"
    assert isinstance(run.events[-1], Result)


def test_api_errors_are_classified_and_end_their_turns() -> None:
    run = replay("api_errors")
    errors = _of(run.events, Error)
    assert [(e.error_class, e.code) for e in errors] == [
        ("limit", "claude.limit.rate_limited"), ("auth", "claude.auth.invalid_key"),
        ("overloaded", "claude.overloaded"), ("entitlement", "claude.entitlement.billing"),
    ]
    assert "429" in errors[0].message
    results = _of(run.events, Result)
    assert [(r.stop_reason, r.is_error) for r in results] == [("error", True)] * 4 + [("end_turn", False)]
    assert _text(run.events) == "Recovered."  # the CLI's synthetic error text is not assistant text


def test_set_model_takes_effect_on_the_next_turn() -> None:
    run = replay("set_model")
    assert json.loads(run.sent[2]) == {"type": "control_request", "request_id": "corral_2",
                                       "request": {"subtype": "set_model", "model": "claude-sonnet-4-5"}}
    assert [i.model for i in _of(run.events, Init)] == ["claude-opus-4-8[1m]", "claude-sonnet-4-5"]
    assert _of(run.events, Error) == []


def test_resume_keeps_the_vendor_session_id() -> None:
    first, second = replay("resume_first"), replay("resume")
    assert first.translator.vendor_session_id == second.translator.vendor_session_id
    assert _text(second.events) == "The word was apple."


def test_auto_mode_runs_tools_without_asking() -> None:
    run = replay("mcp_auto")
    assert _of(run.events, Permission) == []
    assert [t.phase for t in _of(run.events, Tool)] == ["started", "completed"]
    assert _of(run.events, Init)[0].model == "claude-sonnet-4-5"
