"""The Claude translator on hand-written frames: the paths no recording reaches (garbage, unknown
control requests, drift, misuse by the caller, a CLI that never replays a steer)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.harness import HarnessRequest, Output, Send
from actors.vendors.claude.translate import ClaudeTranslator
from protocol.errors import ProtocolError, SessionBusy, UnknownPermission
from protocol.events import Assistant, Error, Init, LimitWindow, Limits, Permission, Result, Thought, Tool
from tests.actors.vendors.claude.live import uuids


def frame(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


def sends(outputs: list[Output] | None) -> list[dict[str, Any]]:
    return [json.loads(o.data) for o in outputs or [] if isinstance(o, Send)]


def events(outputs: list[Output] | None) -> list[Any]:
    return [o for o in outputs or [] if not isinstance(o, Send)]


def result(**fields: Any) -> bytes:
    base: dict[str, Any] = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 5,
                            "stop_reason": "end_turn", "session_id": "sid", "total_cost_usd": 0.5,
                            "usage": {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 5,
                                      "cache_creation_input_tokens": 6}}
    return frame(**{**base, **fields})


def replay_of(key: str) -> bytes:
    return frame(type="user", message={"role": "user", "content": "x"}, uuid=key, isReplay=True)


@pytest.fixture
def t() -> ClaudeTranslator:
    """A ready translator (the initialize answer already arrived)."""
    translator = ClaudeTranslator(HarnessRequest(session_id="s", cwd="/w", work_dir="/r"), new_uuid=uuids())
    [start] = sends(translator.start(0))
    assert start == {"type": "control_request", "request_id": "corral_1",
                     "request": {"subtype": "initialize", "hooks": None}}
    before = translator.ready
    assert not before
    translator.receive(frame(type="control_response", response={
        "subtype": "success", "request_id": "corral_1", "response": {"pid": 1}}), 0)
    assert translator.ready
    return translator


def test_an_initialize_error_still_makes_the_child_ready() -> None:
    translator = ClaudeTranslator(HarnessRequest(session_id="s", cwd="/w", work_dir="/r"))
    translator.start(0)
    translator.receive(frame(type="control_response", response={
        "subtype": "error", "request_id": "corral_1", "error": "old CLI"}), 0)
    assert translator.ready


def test_resume_knows_the_vendor_session_id_before_the_first_frame() -> None:
    translator = ClaudeTranslator(HarnessRequest(session_id="s", cwd="/w", work_dir="/r", resume="abc"))
    assert translator.vendor_session_id == "abc"


@pytest.mark.parametrize("noise", [b"", b"   ", b"\r", b"[SandboxDebug] hello", b"not json at all"])
def test_blank_lines_and_debug_noise_are_skipped(t: ClaudeTranslator, noise: bytes) -> None:
    assert t.receive(noise, 0) == []


@pytest.mark.parametrize("garbage", [b"{", b'{"type": "result", "is_error": "nope"}', b'{"type":"user"}',
                                     b'{"type": "assistant", "message": 3}'])
def test_garbage_that_looks_like_a_frame_is_a_protocol_error(t: ClaudeTranslator, garbage: bytes) -> None:
    with pytest.raises(ProtocolError):
        t.receive(garbage, 0)


def test_unknown_frame_types_and_fields_are_ignored(t: ClaudeTranslator) -> None:
    assert t.receive(frame(type="command_lifecycle", state="queued"), 0) == []
    assert t.receive(frame(type="system", subtype="api_retry", attempt=1), 0) == []
    out = t.receive(frame(type="system", subtype="init", session_id="sid", model="m", cwd="/w", tools=["Bash"],
                          brand_new_field={"x": 1}), 0)
    assert out == [Init(vendor_session_id="sid", model="m", cwd="/w", tools=["Bash"])]


def test_a_crlf_terminated_frame_is_read(t: ClaudeTranslator) -> None:
    out = t.receive(frame(type="system", subtype="init", session_id="sid") + b"\r\n", 0)
    assert [type(e) for e in out] == [Init]


def test_unknown_control_requests_get_an_error_answer(t: ClaudeTranslator) -> None:
    out = t.receive(frame(type="control_request", request_id="r1", request={"subtype": "hook_callback"}), 0)
    [answer] = sends(out)
    assert answer["response"]["subtype"] == "error" and answer["response"]["request_id"] == "r1"
    assert "hook_callback" in answer["response"]["error"]
    out = t.receive(frame(type="control_request", request_id="r2", request={"subtype": "can_use_tool"}), 0)
    assert sends(out)[0]["response"]["subtype"] == "error"  # no tool_name: refused, not a hang


def test_a_refused_control_request_of_ours_is_an_error_event(t: ClaudeTranslator) -> None:
    t.set_model("nope", 0)
    out = t.receive(frame(type="control_response", response={
        "subtype": "error", "request_id": "corral_2", "error": "unknown model"}), 0)
    assert out == [Error(error_class="protocol", code="claude.protocol.control_error",
                         message="Claude refused set_model: unknown model")]


def test_echoes_of_our_own_answers_are_ignored(t: ClaudeTranslator) -> None:
    echo = frame(type="control_response", response={"subtype": "success", "request_id": "perm-1",
                                                    "response": {"behavior": "allow"}})
    assert t.receive(echo, 0) == []


def test_an_unstreamed_assistant_block_is_emitted_whole(t: ClaudeTranslator) -> None:
    out = t.receive(frame(type="assistant", message={"id": "m1", "content": [
        {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Hi"}]}), 0)
    assert out == [Thought(text="hmm"), Assistant(text="Hi")]


def test_a_block_longer_than_its_stream_emits_only_the_tail(t: ClaudeTranslator) -> None:
    t.receive(frame(type="stream_event", event={"type": "message_start", "message": {"id": "m1"}}), 0)
    t.receive(frame(type="stream_event", event={"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "text", "text": ""}}), 0)
    delta = t.receive(frame(type="stream_event", event={"type": "content_block_delta", "index": 0,
                                                        "delta": {"type": "text_delta", "text": "Hel"}}), 0)
    assert delta == [Assistant(text="Hel", delta=True)]
    out = t.receive(frame(type="assistant", message={"id": "m1", "content": [{"type": "text", "text": "Hello"}]}), 0)
    assert out == [Assistant(text="lo", delta=True)]
    again = t.receive(frame(type="assistant", message={"id": "m1", "content": [{"type": "text", "text": "More"}]}), 0)
    assert again == [Assistant(text="More")]  # no streamed block left to match


def test_subagent_text_is_hidden_but_its_tools_are_shown(t: ClaudeTranslator) -> None:
    out = t.receive(frame(type="assistant", parent_tool_use_id="task-1", message={"id": "m2", "content": [
        {"type": "text", "text": "sub says"}, {"type": "tool_use", "id": "tu", "name": "Read", "input": {}}]}), 0)
    assert out == [Tool(call_id="tu", name="Read", kind="read", phase="started", input={})]
    assert t.receive(frame(type="stream_event", parent_tool_use_id="task-1", event={
        "type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}), 0) == []


def test_tool_results_with_block_content_and_unknown_calls(t: ClaudeTranslator) -> None:
    out = t.receive(frame(type="user", message={"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "never-started", "is_error": True,
         "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}]}), 0)
    assert out == [Tool(call_id="never-started", name="unknown", phase="completed", output="a\n[image]\nb",
                        is_error=True)]


def test_permission_kinds_follow_the_tool_name(t: ClaudeTranslator) -> None:
    out = t.receive(frame(type="control_request", request_id="p1", request={
        "subtype": "can_use_tool", "tool_name": "mcp__srv__do", "input": {"a": 1}}), 0)
    assert out == [Permission(permission_id="p1", tool="mcp__srv__do", kind="mcp", input={"a": 1},
                              options=["allow", "deny", "allow_always"])]


def test_allow_always_without_suggestions_allows_the_tool_for_the_session(t: ClaudeTranslator) -> None:
    t.receive(frame(type="control_request", request_id="p1", request={
        "subtype": "can_use_tool", "tool_name": "Write", "input": {"file_path": "a"},
        "permission_suggestions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]}), 0)
    [answer] = sends(t.decide("p1", "allow_always", 0))
    assert answer["response"]["response"] == {
        "behavior": "allow", "updatedInput": {"file_path": "a"},
        "updatedPermissions": [{"type": "addRules", "rules": [{"toolName": "Write"}], "behavior": "allow",
                                "destination": "session"}]}


def test_deciding_twice_or_an_unknown_id_is_refused(t: ClaudeTranslator) -> None:
    t.receive(frame(type="control_request", request_id="p1", request={
        "subtype": "can_use_tool", "tool_name": "Bash", "input": {}}), 0)
    assert len(sends(t.decide("p1", "allow", 0))) == 1
    with pytest.raises(UnknownPermission):
        t.decide("p1", "allow", 0)
    with pytest.raises(UnknownPermission):
        t.decide("never", "deny", 0)


def test_a_withdrawn_permission_is_answered_with_nothing(t: ClaudeTranslator) -> None:
    t.receive(frame(type="control_request", request_id="p1", request={
        "subtype": "can_use_tool", "tool_name": "Bash", "input": {}}), 0)
    assert t.receive(frame(type="control_cancel_request", request_id="p1"), 0) == []
    assert t.decide("p1", "allow", 0) == []


def test_commands_outside_a_turn(t: ClaudeTranslator) -> None:
    assert t.steer("later", 0) is None  # no turn: the session holds or prompts it
    assert t.interrupt(0) == []
    assert t.goodbye(0) == []
    t.prompt("go", 0)
    with pytest.raises(SessionBusy):
        t.prompt("again", 0)
    assert sends(t.goodbye(0))[0]["request"] == {"subtype": "interrupt"}


def test_result_fields_and_cost_shares(t: ClaudeTranslator) -> None:
    t.prompt("go", 0)
    [first] = events(t.receive(result(), 0))
    assert first == Result(stop_reason="end_turn", cost_usd=0.5, duration_ms=5, usage=first.usage)
    assert (first.usage.cache_read_tokens, first.usage.cache_write_tokens) == (5, 6)
    t.prompt("go", 0)
    [second] = events(t.receive(result(total_cost_usd=0.75, usage=None), 0))
    assert second.cost_usd == 0.25 and second.usage.input_tokens == 0
    t.prompt("go", 0)
    [third] = events(t.receive(result(total_cost_usd=0.1), 0))
    assert third.cost_usd == 0.1  # the running total dropped: it was reset
    t.prompt("go", 0)
    [fourth] = events(t.receive(result(total_cost_usd=None), 0))
    assert fourth.cost_usd is None


@pytest.mark.parametrize(("subtype", "stop"), [("error_max_turns", "max_turns"),
                                               ("error_max_budget_usd", "max_budget_usd")])
def test_limit_subtypes(t: ClaudeTranslator, subtype: str, stop: str) -> None:
    t.prompt("go", 0)
    error, res = events(t.receive(result(subtype=subtype, is_error=True, errors=["stopped"]), 0))
    assert res.stop_reason == stop and res.is_error
    assert error.error_class == "limit" and error.message == "stopped"


def test_an_error_during_execution_we_did_not_cause_is_an_error(t: ClaudeTranslator) -> None:
    t.prompt("go", 0)
    error, res = events(t.receive(result(subtype="error_during_execution", is_error=True, stop_reason=None,
                                         errors=["No conversation found with session ID: x"]), 0))
    assert (res.stop_reason, res.is_error) == ("error", True)
    assert error.code == "claude.unknown.session_not_found"


def test_a_steer_the_cli_never_replays_is_waited_for_across_one_result_only(t: ClaudeTranslator) -> None:
    t.prompt("go", 0)
    assert len(sends(t.steer("more", 0))) == 1
    assert events(t.receive(result(total_cost_usd=0.5), 0)) == []  # held: the steer should run next
    [merged] = events(t.receive(result(total_cost_usd=0.75), 0))
    assert merged.cost_usd == 0.75 and merged.usage.input_tokens == 6 and merged.duration_ms == 10
    t.prompt("next", 0)  # the turn is over


def test_a_replayed_steer_does_not_hold_the_result(t: ClaudeTranslator) -> None:
    t.prompt("go", 0)
    [line] = sends(t.steer("more", 0))
    t.receive(replay_of(line["uuid"]), 0)
    assert [type(e) for e in events(t.receive(result(), 0))] == [Result]


def test_an_error_result_is_never_held(t: ClaudeTranslator) -> None:
    t.prompt("go", 0)
    t.steer("more", 0)
    out = events(t.receive(result(is_error=True, api_error_status=529, result="Overloaded"), 0))
    assert [type(e) for e in out] == [Error, Result]
    assert out[0].code == "claude.overloaded"


def test_a_synthetic_error_message_tags_the_classification(t: ClaudeTranslator) -> None:
    t.prompt("go", 0)
    assert t.receive(frame(type="assistant", error="billing_error", message={
        "id": "x", "model": "<synthetic>", "content": [{"type": "text", "text": "Credit balance is too low"}]}), 0) == []
    error, _ = events(t.receive(result(is_error=True, result="Something odd"), 0))
    assert error.code == "claude.entitlement.billing"


def test_keys_in_an_error_result_are_masked(t: ClaudeTranslator) -> None:
    # Claude's error results used to reach clients unredacted (every other vendor masked keys)
    t.prompt("go", 0)
    error, _ = events(t.receive(result(is_error=True, api_error_status=401, result=(
        "API Error: 401 invalid x-api-key sk-ant-api03-Secret_1 (AIza key AIzaSyD-0123456789abcdefghijklmnopqrst)")), 0))
    assert error.code == "claude.auth.invalid_key"
    assert "Secret_1" not in error.message and "SyD-0123456789abcdefghijklmnopqrst" not in error.message
    assert "sk-***" in error.message and "AIz***" in error.message


def test_keys_in_a_refused_control_request_are_masked(t: ClaudeTranslator) -> None:
    t.set_model("gemini", 0)
    (error,) = t.receive(frame(type="control_response", response={
        "subtype": "error", "request_id": "corral_2", "error": "bad key AIzaSyD-0123456789abcdefghijklmnopqrst"}), 0)
    assert error.code == "claude.protocol.control_error" and "AIz***" in error.message


def test_rate_limit_events_become_limits(t: ClaudeTranslator) -> None:
    out = t.receive(frame(type="rate_limit_event", rate_limit_info={
        "status": "allowed_warning", "resetsAt": 1767225600, "rateLimitType": "five_hour", "utilization": 0.8}), 0)
    assert out == [Limits(windows=[LimitWindow(name="five_hour", used_percent=80.0,
                                               resets_at="2026-01-01T00:00:00.000Z")])]
