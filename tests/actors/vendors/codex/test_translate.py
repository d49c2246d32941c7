"""The Codex translator over frames recorded from the real ``codex app-server`` 0.171.0.

Each recording (``recordings/*.ndjson``, made by ``record.py`` against the fake OpenAI server)
is replayed through a fresh translator: the translator must produce exactly the frames it sent
while recording, and the events asserted below. Synthetic frames (``frames.py``) cover the turn
edges a recording cannot reach (garbage, races, failed requests); ``test_approvals.py`` and
``test_items.py`` cover the rest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.harness import HarnessRequest, Output, Send
from actors.vendors.codex import CodexTranslator, thread_policy
from protocol.sandbox import SandboxInfo
from protocol.errors import BadRequest, ProtocolError, SessionBusy
from protocol.events import (
    Assistant, Error, Event, Init, Permission, PermissionDecided, Result, Thought, Tool,
    UsageReport,
)
from protocol.models import Permissions

from .frames import events, frame, ready, request, sends, turn

RECORDINGS = Path(__file__).resolve().parent / "recordings"


class Replay:
    """A recording played through a fresh translator."""

    def __init__(self, name: str) -> None:
        lines = [json.loads(line) for line in (RECORDINGS / f"{name}.ndjson").read_text().splitlines()]
        meta = lines[0]
        assert meta["dir"] == "meta"
        self.request = msgspec.convert(meta["request"], HarnessRequest)
        self.translator = CodexTranslator(self.request, client_version="0.1.0")
        self.events: list[Event] = []
        self.sent: list[Any] = []
        self.recorded_sends = [line["frame"] for line in lines if line["dir"] == "send"]
        self.recv = [line["frame"] for line in lines if line["dir"] == "recv"]
        for line in lines[1:]:
            if line["dir"] == "call":
                self._take(getattr(self.translator, line["call"])(*line["args"], 0.0) or [])
            elif line["dir"] == "recv":
                self._take(self.translator.receive(json.dumps(line["frame"]).encode(), 0.0))

    def _take(self, outputs: list[Output]) -> None:
        for output in outputs:
            if isinstance(output, Send):
                assert output.data.endswith(b"\n") and output.data.count(b"\n") == 1
                self.sent.append(json.loads(output.data))
            else:
                self.events.append(output)

    def of(self, kind: type[Any]) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]

    def sent_method(self, method: str) -> list[dict[str, Any]]:
        return [sent for sent in self.sent if sent.get("method") == method]


ALL = sorted(path.stem for path in RECORDINGS.glob("*.ndjson"))


@pytest.mark.parametrize("name", ALL)
def test_replay_sends_what_was_recorded(name: str) -> None:
    replay = Replay(name)
    assert replay.sent == replay.recorded_sends
    assert all("jsonrpc" not in line for line in replay.recv + replay.sent)
    # Every recorded session opened a thread, and ends its turns with a result.
    init = replay.of(Init)
    assert len(init) == 1 and init[0].vendor_session_id == replay.translator.vendor_session_id
    assert replay.translator.ready
    assert replay.translator.turn_id is None
    assert isinstance(replay.events[-1], Result)


def test_handshake_order_and_thread_params() -> None:
    replay = Replay("text_turn")
    methods = [sent.get("method") for sent in replay.sent[:3]]
    assert methods == ["initialize", "initialized", "thread/start"]
    assert "id" not in replay.sent[1]
    params = replay.sent[2]["params"]
    assert params == {"cwd": replay.request.cwd, "approvalPolicy": "on-request",
                      "sandbox": "workspace-write", "approvalsReviewer": "user", "model": "gpt-5.5"}
    init = replay.of(Init)[0]
    assert (init.model, init.cwd) == ("gpt-5.5", replay.request.cwd)


def test_text_turn_streams_thought_and_text_then_result() -> None:
    replay = Replay("text_turn")
    thoughts = replay.of(Thought)
    # Streamed text is not repeated whole when its item completes (one event model).
    assert [t.delta for t in thoughts] == [True]
    assert "".join(t.text for t in thoughts) == "The user greets me."
    texts = replay.of(Assistant)
    assert all(t.delta for t in texts)
    assert "".join(t.text for t in texts) == "Hello from the fake model."
    result = replay.of(Result)[0]
    assert (result.stop_reason, result.is_error, result.cost_usd) == ("end_turn", False, None)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (100, 10)
    assert result.duration_ms is not None and result.duration_ms >= 0


def test_exec_turn_tool_phases_and_per_turn_usage() -> None:
    replay = Replay("exec_turn")
    tools = replay.of(Tool)
    assert [(t.name, t.kind, t.phase) for t in tools] == [
        ("shell", "exec", "started"), ("shell", "exec", "completed")]
    assert tools[0].call_id == tools[1].call_id == "call_2_1"
    assert "printf made > made.txt" in tools[0].input["command"]
    assert tools[1].output == "created\n" and not tools[1].is_error
    first, second = replay.of(Result)
    # Two model calls in the first turn, one in the second: usage is per turn, not cumulative.
    assert (first.usage.input_tokens, first.usage.output_tokens) == (200, 20)
    assert (second.usage.input_tokens, second.usage.output_tokens) == (100, 10)
    assert [u.input_tokens for u in replay.of(UsageReport)] == [100, 200, 100]


def test_denied_approval_declines_and_the_turn_goes_on() -> None:
    replay = Replay("approval_deny")
    (ask,) = replay.of(Permission)
    # The item (the model's tool-call id), not the JSON-RPC id that restarts at 0 per process.
    assert (ask.permission_id, ask.tool, ask.kind) == ("call_2_0", "shell", "exec")
    assert ask.options == ["allow", "deny", "allow_always"]
    assert "touch denied.txt" in ask.input["command"]
    assert ask.input["reason"] == "Create denied.txt outside the sandbox?"
    assert {"id": 0, "result": {"decision": "decline"}} in replay.sent
    done = [t for t in replay.of(Tool) if t.phase == "completed"]
    assert len(done) == 1 and done[0].is_error
    assert replay.of(PermissionDecided) == []  # resolved after our own answer: nothing to cancel
    assert replay.of(Result)[-1].stop_reason == "end_turn"


def test_allow_always_accepts_for_the_session() -> None:
    replay = Replay("approval_allow")
    assert {"id": 0, "result": {"decision": "acceptForSession"}} in replay.sent
    done = [t for t in replay.of(Tool) if t.phase == "completed"]
    assert len(done) == 1 and not done[0].is_error


def test_apply_patch_is_an_edit_tool() -> None:
    replay = Replay("apply_patch")
    started, completed = replay.of(Tool)
    assert (started.name, started.kind) == ("apply_patch", "edit")
    (change,) = started.input["changes"]
    assert change["path"].endswith("/notes.txt") and change["kind"] == {"type": "add"}
    assert completed.phase == "completed" and not completed.is_error


def test_interrupt_sends_the_active_turn_id() -> None:
    replay = Replay("interrupt")
    (start,) = [f for f in replay.recv if f.get("id") == 3]
    (interrupt,) = replay.sent_method("turn/interrupt")
    assert interrupt["params"] == {"threadId": replay.translator.vendor_session_id,
                                   "turnId": start["result"]["turn"]["id"]}
    result = replay.of(Result)[-1]
    assert (result.stop_reason, result.is_error) == ("interrupted", False)


def test_steer_names_the_expected_turn() -> None:
    replay = Replay("steer")
    (steer,) = replay.sent_method("turn/steer")
    (started,) = [f for f in replay.recv if f.get("method") == "turn/started"]
    assert steer["params"]["expectedTurnId"] == started["params"]["turn"]["id"]
    assert steer["params"]["input"][0]["text"] == "also mention pears"
    assert "".join(a.text for a in replay.of(Assistant)).endswith("Steered answer.")
    assert len(replay.of(Result)) == 1


def test_set_model_rides_on_the_next_turn() -> None:
    replay = Replay("set_model")
    (start,) = replay.sent_method("turn/start")
    assert start["params"]["model"] == "gpt-5.5-mini"


def test_http_errors_are_classified_and_end_the_turn() -> None:
    replay = Replay("errors")
    errors = replay.of(Error)
    assert [(e.error_class, e.code) for e in errors] == [
        ("auth", "codex.auth.invalid_key"),
        ("limit", "codex.limit.rate_limited"),
        ("overloaded", "codex.overloaded.server_error"),
        ("entitlement", "codex.entitlement.quota"),
    ]
    assert all("sk-test" not in e.message for e in errors)
    results = replay.of(Result)
    assert [(r.stop_reason, r.is_error) for r in results] == [("error", True)] * 4
    # One error per failed turn, although Codex reports it twice (notification and turn).
    kinds = [type(e).__name__ for e in replay.events if isinstance(e, (Error, Result))]
    assert kinds == ["Error", "Result"] * 4


def test_mcp_tool_approval_arrives_as_an_elicitation() -> None:
    replay = Replay("mcp")
    (ask,) = replay.of(Permission)
    assert (ask.tool, ask.kind) == ("mcp__echo__secret_check", "mcp")
    assert ask.input["arguments"] == {"word": "one"}
    assert {"id": 0, "result": {"action": "accept", "content": {},
                                "_meta": {"persist": "session"}}} in replay.sent
    done = [t for t in replay.of(Tool) if t.phase == "completed"]
    assert [(t.name, t.input, t.is_error) for t in done] == [
        ("mcp__echo__secret_check", {"word": "one"}, False),
        ("mcp__echo__secret_check", {"word": "two"}, False)]
    # The secret reached the MCP server through env_vars (the server says so in its output).
    assert all("token ok=True" in t.output["content"][0]["text"] for t in done)


def test_resume_reopens_the_recorded_thread() -> None:
    first, second = Replay("resume_first"), Replay("resume")
    (resume,) = second.sent_method("thread/resume")
    thread = first.translator.vendor_session_id
    assert resume["params"]["threadId"] == thread and resume["params"]["excludeTurns"] is True
    assert second.request.resume == thread
    assert second.of(Init)[0].vendor_session_id == thread
    # The restored totals are the base: the resumed turn reports only its own usage.
    assert second.of(Result)[0].usage.input_tokens == 100


@pytest.mark.parametrize("line", [b"not json", b"[1, 2]", b'{"foo": 1}', b'{"id": 1}',
                                  b'{"method": 3}'])
def test_garbage_is_a_protocol_error(line: bytes) -> None:
    with pytest.raises(ProtocolError):
        ready().receive(line, 0.0)


def test_blank_lines_and_carriage_returns_are_tolerated() -> None:
    t = ready()
    assert t.receive(b"  \r\n", 0.0) == []
    assert t.receive(b'{"method": "thread/status/changed", "params": {}}\r', 0.0) == []


def test_a_response_to_an_unknown_id_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        ready().receive(frame({"id": 99, "result": {}}), 0.0)


def test_prompt_before_ready_or_during_a_turn_is_refused() -> None:
    t = CodexTranslator(request())
    with pytest.raises(SessionBusy):
        t.prompt("x", 0.0)
    t = ready()
    t.prompt("x", 0.0)
    with pytest.raises(SessionBusy):
        t.prompt("y", 0.0)


def test_steer_waits_for_the_turn_id_and_interrupt_is_deferred_until_then() -> None:
    t = ready()
    (start,) = sends(t.prompt("x", 0.0))
    assert t.steer("more", 0.0) is None
    assert t.interrupt(0.0) == []
    out = t.receive(frame({"id": start["id"], "result": {"turn": {"id": "t9"}}}), 0.0)
    (interrupt,) = sends(out)
    assert interrupt["method"] == "turn/interrupt"
    assert interrupt["params"] == {"threadId": "th", "turnId": "t9"}
    (steer,) = sends(t.steer("more", 0.0))
    assert steer["params"]["expectedTurnId"] == "t9"


def test_interrupt_without_a_turn_sends_nothing_and_its_race_error_is_benign() -> None:
    t = ready()
    assert t.interrupt(0.0) == []
    turn(t)
    (interrupt,) = sends(t.interrupt(0.0))
    error = {"id": interrupt["id"], "error": {"code": -32600, "message": "no active turn to interrupt"}}
    assert t.receive(frame(error), 0.0) == []


def _usage(turn_id: str, total: int) -> bytes:
    tokens = {"totalTokens": total, "inputTokens": total, "cachedInputTokens": total // 10,
              "cacheWriteInputTokens": 0, "outputTokens": 0, "reasoningOutputTokens": 0}
    return frame({"method": "thread/tokenUsage/updated", "params": {
        "threadId": "th", "turnId": turn_id, "tokenUsage": {"total": tokens, "last": tokens}}})


def test_usage_outside_the_running_turn_only_moves_the_base() -> None:
    t = ready()
    (start,) = sends(t.prompt("x", 0.0))
    assert t.receive(_usage("old-turn", 1000), 0.0) == []  # restored totals, turn still pending
    t.receive(frame({"id": start["id"], "result": {"turn": {"id": "t1"}}}), 0.0)
    (report,) = t.receive(_usage("t1", 1500), 0.0)
    assert (report.input_tokens, report.cache_read_tokens) == (450, 50)
    assert t.receive(_usage("other", 1600), 0.0) == []
    (result,) = t.receive(frame({"method": "turn/completed", "params": {"threadId": "th", "turn": {
        "id": "t1", "status": "completed", "durationMs": 5}}}), 0.0)
    assert (result.usage.input_tokens, result.usage.cache_read_tokens, result.duration_ms) == (
        450, 50, 5)


def test_failed_turn_start_ends_the_turn_with_an_error_result() -> None:
    t = ready()
    (start,) = sends(t.prompt("x", 0.0))
    out = t.receive(frame({"id": start["id"], "error": {"code": -32600, "message": "boom"}}), 0.0)
    error, result = events(out)
    assert isinstance(error, Error) and error.code == "codex.protocol.rpc_error"
    assert "boom" in error.message
    assert isinstance(result, Result) and result.is_error
    t.prompt("again", 0.0)  # the translator is idle again


@pytest.mark.parametrize("path", ["rpc_error", "turn_failed"])
def test_a_google_key_in_an_error_is_masked(path: str) -> None:
    t = ready()
    leak = "API key not valid: AIzaSyD-0123456789abcdefghijklmnopqrst"
    if path == "rpc_error":
        (start,) = sends(t.prompt("x", 0.0))
        out = t.receive(frame({"id": start["id"], "error": {"code": -32600, "message": leak}}), 0.0)
    else:
        turn(t, "t1")
        out = t.receive(frame({"method": "turn/completed", "params": {"threadId": "th", "turn": {
            "id": "t1", "status": "failed", "error": {"message": leak}}}}), 0.0)
    (error,) = [e for e in events(out) if isinstance(e, Error)]
    assert "SyD-0123456789abcdefghijklmnopqrst" not in error.message and "AIz***" in error.message


def test_a_steer_that_lost_the_race_starts_a_new_turn() -> None:
    t = ready()
    turn(t, "t1")
    (steer,) = sends(t.steer("late", 0.0))
    t.receive(frame({"method": "turn/completed", "params": {"threadId": "th", "turn": {
        "id": "t1", "status": "completed"}}}), 0.0)
    out = t.receive(frame({"id": steer["id"], "error": {"code": -32600, "message": "no active turn"}}), 0.0)
    (start,) = sends(out)
    assert start["method"] == "turn/start" and start["params"]["input"][0]["text"] == "late"


def test_failed_resume_reports_and_falls_back_to_a_new_thread() -> None:
    t = CodexTranslator(request(resume="old"))
    t.start(0.0)
    (_, resume) = sends(t.receive(frame({"id": 1, "result": {}}), 0.0))
    assert resume["method"] == "thread/resume" and resume["params"]["threadId"] == "old"
    out = t.receive(frame({"id": resume["id"], "error": {"code": -32600,
                                                          "message": "no rollout found"}}), 0.0)
    (error,) = events(out)
    assert error.code == "codex.protocol.resume_failed" and error.error_class == "protocol"
    (start,) = sends(out)
    assert start["method"] == "thread/start"
    t.receive(frame({"id": start["id"], "result": {"thread": {"id": "new"}}}), 0.0)
    assert t.vendor_session_id == "new"


@pytest.mark.parametrize(("mode", "expected"), [
    ("ask", {"approvalPolicy": "untrusted", "sandbox": "workspace-write", "approvalsReviewer": "user"}),
    ("auto_edit", {"approvalPolicy": "on-request", "sandbox": "workspace-write",
                   "approvalsReviewer": "user"}),
    ("auto", {"approvalPolicy": "never", "sandbox": "danger-full-access"}),
    ("inherit", {}),
])
def test_policy_mapping(mode: Any, expected: dict[str, str]) -> None:
    assert thread_policy(request(permissions=Permissions(mode=mode))) == expected


def test_policy_options_override_and_instructions_travel_in_thread_start() -> None:
    inherit = request(permissions=Permissions(mode="inherit"), instructions="Be brief.",
                       options={"approval_policy": "untrusted", "sandbox": "read-only"})
    t = CodexTranslator(inherit)
    t.start(0.0)
    (_, start) = sends(t.receive(frame({"id": 1, "result": {}}), 0.0))
    assert start["params"] == {"cwd": "/w", "approvalPolicy": "untrusted", "sandbox": "read-only",
                               "developerInstructions": "Be brief."}
    with pytest.raises(BadRequest):
        thread_policy(request(options={"sandbox": 3}))
    # an object is corral's own sandbox (actors.sandboxing): Codex keeps the mapped policy
    boxed = thread_policy(request(options={"sandbox": {"mode": "bwrap"}}))
    assert boxed == {"approvalPolicy": "untrusted", "sandbox": "workspace-write", "approvalsReviewer": "user"}
    # a session in corral's sandbox: Codex's own cannot nest inside it
    inside = thread_policy(request(sandbox=SandboxInfo(mode="auto", effective="bwrap", net="on")))
    assert inside == {"approvalPolicy": "untrusted", "sandbox": "danger-full-access", "approvalsReviewer": "user"}
