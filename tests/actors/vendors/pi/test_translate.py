"""The pi translator over lines recorded from the real ``pi --mode rpc`` 0.73.1.

Each recording (``recordings/*.ndjson``, made by ``record.py`` against the fake model server) is
replayed through a fresh translator: it must produce exactly the lines it sent while recording,
and the events asserted below. Synthetic lines cover what a recording cannot reach (garbage,
other extensions' dialogs, refused commands, a cancelled retry, a slow idle).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.harness import HarnessRequest, Output, Send
from actors.vendors.pi import PiTranslator
from protocol.errors import BadRequest, ProtocolError, SessionBusy, UnknownPermission
from protocol.events import (
    Assistant, Error, Event, Init, Permission, Result, Thought, Tool, Usage, UsageReport,
)
from protocol.models import McpServer, Permissions

RECORDINGS = Path(__file__).resolve().parent / "recordings"


class Replay:
    """A recording played through a fresh translator."""

    def __init__(self, name: str) -> None:
        lines = [json.loads(line) for line in (RECORDINGS / f"{name}.ndjson").read_text().splitlines()]
        assert lines[0]["dir"] == "meta"
        self.request = msgspec.convert(lines[0]["request"], HarnessRequest)
        self.translator = PiTranslator(self.request)
        self.events: list[Event] = []
        self.sent: list[Any] = []
        self.recorded_sends = [line["frame"] for line in lines if line["dir"] == "send"]
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
        return [e for e in self.events if isinstance(e, kind)]

    def said(self) -> str:
        return "".join(e.text for e in self.of(Assistant))


NAMES = sorted(p.stem for p in RECORDINGS.glob("*.ndjson"))


@pytest.mark.parametrize("name", NAMES)
def test_replay_sends_what_was_recorded(name: str) -> None:
    replay = Replay(name)
    assert replay.sent == replay.recorded_sends
    (init,) = replay.of(Init)
    assert init.vendor_session_id.endswith(".jsonl") and init.cwd == replay.request.cwd
    assert replay.events[0] == init
    assert not replay.translator.running


def test_text_turn_streams_thought_then_text_once() -> None:
    replay = Replay("text_turn")
    assert replay.of(Init)[0].model == "fake/fake-model"
    assert "".join(t.text for t in replay.of(Thought)) == "The user greets me."
    assert all(t.delta for t in replay.of(Thought)) and all(a.delta for a in replay.of(Assistant))
    assert replay.said() == "Hello from the fake model."
    (result,) = replay.of(Result)
    assert result == Result(stop_reason="end_turn", is_error=False,
                            usage=Usage(input_tokens=20, output_tokens=5), cost_usd=None)
    assert replay.events[-1] == result


def test_tool_turn_reports_the_bash_call_and_sums_usage() -> None:
    replay = Replay("tool_turn")
    tools = replay.of(Tool)
    assert [(t.name, t.kind, t.phase) for t in tools][0] == ("bash", "exec", "started")
    assert tools[0].input == {"command": "printf made > made.txt && echo created"}
    done = tools[-1]
    assert (done.phase, done.output, done.is_error) == ("completed", "created\n", False)
    assert {t.call_id for t in tools} == {tools[0].call_id}
    first, second = replay.of(Result)
    assert first.usage == Usage(input_tokens=40, output_tokens=10)  # two model calls
    assert second.stop_reason == "end_turn"
    assert replay.said() == "I created made.txt.Second turn answer."
    reports = replay.of(UsageReport)
    assert reports[1].input_tokens == 40  # the turn's running total


def test_permissions_deny_then_allow() -> None:
    replay = Replay("permissions")
    assert replay.request.permissions.mode == "ask"
    denied, allowed = replay.of(Permission)
    assert (denied.tool, denied.kind, denied.input) == ("bash", "exec", {"command": "touch denied.txt"})
    assert (allowed.tool, allowed.kind) == ("write", "edit")
    assert allowed.input == {"path": "allowed.txt", "content": "yes"}
    assert denied.options == ["allow", "deny", "allow_always"]
    answers = [f for f in replay.sent if f["type"] == "extension_ui_response"]
    assert answers == [{"type": "extension_ui_response", "id": denied.permission_id, "confirmed": False},
                       {"type": "extension_ui_response", "id": allowed.permission_id, "confirmed": True}]
    completed = [t for t in replay.of(Tool) if t.phase == "completed"]
    assert [t.is_error for t in completed] == [True, False]
    assert "denied" in completed[0].output
    assert [r.stop_reason for r in replay.of(Result)] == ["end_turn", "end_turn"]


def test_interrupt_ends_with_interrupted_and_the_next_turn_works() -> None:
    replay = Replay("interrupt")
    assert {"type": "abort", "id": "corral:3"} in replay.sent
    assert [(r.stop_reason, r.is_error) for r in replay.of(Result)] == [
        ("interrupted", False), ("end_turn", False)]
    assert replay.said().endswith("After the interrupt.")


def test_interrupt_while_asking_withdraws_the_question() -> None:
    replay = Replay("interrupt_ask")
    (ask,) = replay.of(Permission)
    withdraw = {"type": "extension_ui_response", "id": ask.permission_id, "cancelled": True}
    assert replay.sent[replay.sent.index(withdraw) + 1]["type"] == "abort"
    assert [r.stop_reason for r in replay.of(Result)] == ["interrupted", "end_turn"]


def test_steer_reaches_the_running_run() -> None:
    replay = Replay("steer")
    assert {"type": "prompt", "id": "corral:3", "message": "also mention pears",
            "streamingBehavior": "steer"} in replay.sent
    (result,) = replay.of(Result)
    assert result.stop_reason == "end_turn" and result.usage.input_tokens == 40
    assert replay.said().endswith("With pears.")


def test_set_model_names_provider_and_id() -> None:
    replay = Replay("set_model")
    assert {"type": "set_model", "id": "corral:2", "provider": "fake",
            "modelId": "fake-other"} in replay.sent
    assert replay.of(Result)[0].stop_reason == "end_turn"


def test_errors_are_classified_and_retries_are_one_turn() -> None:
    replay = Replay("errors")
    assert [(r.stop_reason, r.is_error) for r in replay.of(Result)] == [
        ("error", True), ("error", True), ("end_turn", False)]
    assert [e.code for e in replay.of(Error)] == ["pi.auth.invalid_key",
                                                  "pi.overloaded.server_error"]
    assert replay.said() == "Recovered."


def test_resume_opens_the_recorded_session_file() -> None:
    first, second = Replay("resume_first"), Replay("resume")
    file = first.of(Init)[0].vendor_session_id
    assert second.request.resume == file
    assert second.of(Init)[0].vendor_session_id == file


# --- synthetic lines -------------------------------------------------------------------------

def request(**fields: Any) -> HarnessRequest:
    return HarnessRequest(session_id="s", cwd="/work", work_dir="/run", **fields)


def line(**frame: Any) -> bytes:
    return json.dumps(frame).encode()


def ready(**fields: Any) -> PiTranslator:
    translator = PiTranslator(request(**fields))
    translator.start(0.0)
    out = translator.receive(line(type="response", id="corral:1", command="get_state", success=True,
                                  data={"model": {"id": "m", "provider": "p"},
                                        "sessionFile": "/s.jsonl"}), 0.0)
    assert out == [Init(vendor_session_id="/s.jsonl", model="p/m", cwd="/work", tools=[])]
    return translator


def sends(outputs: list[Output]) -> list[Any]:
    return [json.loads(o.data) for o in outputs if isinstance(o, Send)]


def test_garbage_is_a_protocol_error_and_unknown_kinds_are_ignored() -> None:
    translator = ready()
    for bad in (b"not json", b"[1, 2]", b'{"no": "type"}', b'{"type": "agent_end", "messages": 3}'):
        with pytest.raises(ProtocolError):
            translator.receive(bad, 0.0)
    assert translator.receive(line(type="something_new", x=1), 0.0) == []
    assert translator.receive(b"   \n", 0.0) == []


def test_prompt_while_running_is_busy_and_steer_waits_for_a_run() -> None:
    translator = ready()
    assert translator.steer("later", 0.0) is None
    translator.prompt("go", 0.0)
    with pytest.raises(SessionBusy):
        translator.prompt("again", 0.0)
    assert sends(translator.steer("more", 0.0) or []) == [
        {"type": "prompt", "id": "corral:3", "message": "more", "streamingBehavior": "steer"}]
    # Once the run ended (barrier in flight), a steer is held by the session.
    barrier = sends(translator.receive(line(type="agent_end", messages=[]), 0.0))
    assert barrier == [{"type": "get_state", "id": "corral:4"}]
    assert translator.steer("too late", 0.0) is None
    # A steer pi took after its run ended starts a new run: the turn goes on.
    assert translator.receive(line(type="agent_start"), 0.0) == []
    assert translator.receive(line(type="response", id="corral:4", command="get_state",
                                   success=True, data={}), 0.0) == []
    assert translator.running


def test_a_busy_idle_answer_sends_another_barrier() -> None:
    translator = ready()
    translator.prompt("go", 0.0)
    translator.receive(line(type="agent_end", messages=[]), 0.0)
    again = translator.receive(line(type="response", id="corral:3", command="get_state",
                                    success=True, data={"isStreaming": True}), 0.0)
    assert sends(again) == [{"type": "get_state", "id": "corral:4"}]
    done = translator.receive(line(type="response", id="corral:4", command="get_state",
                                   success=True, data={"isStreaming": False}), 0.0)
    assert done == [Result(stop_reason="end_turn")]


def test_a_refused_prompt_ends_the_turn_with_an_error() -> None:
    translator = ready()
    translator.prompt("go", 0.0)
    out = translator.receive(line(type="response", id="corral:2", command="prompt", success=False,
                                  error="No API key found for p."), 0.0)
    assert [type(e) for e in out] == [Error, Result]
    assert isinstance(out[0], Error) and out[0].code == "pi.auth.not_logged_in"
    assert out[1] == Result(stop_reason="error", is_error=True)
    assert not translator.running


def test_a_google_key_in_a_refusal_is_masked() -> None:
    translator = ready()
    translator.prompt("go", 0.0)
    out = translator.receive(line(type="response", id="corral:2", command="prompt", success=False,
                                  error="401 API key not valid: AIzaSyD-0123456789abcdefghijklmnopqrst"), 0.0)
    assert isinstance(out[0], Error) and out[0].code == "pi.auth.invalid_key"
    assert "SyD-0123456789abcdefghijklmnopqrst" not in out[0].message and "AIz***" in out[0].message


def test_an_interrupt_during_a_retry_wait_ends_the_turn() -> None:
    translator = ready()
    translator.prompt("go", 0.0)
    failed = {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "503 busy"}
    translator.receive(line(type="agent_end", messages=[failed]), 0.0)
    translator.receive(line(type="auto_retry_start", attempt=1, errorMessage="503 busy"), 0.0)
    assert translator.receive(line(type="response", id="corral:3", command="get_state",
                                   success=True, data={}), 0.0) == []
    assert sends(translator.interrupt(0.0)) == [{"type": "abort", "id": "corral:4"}]
    out = translator.receive(line(type="auto_retry_end", success=False, attempt=1,
                                  finalError="Retry cancelled"), 0.0)
    assert out[-1] == Result(stop_reason="interrupted", is_error=False)
    assert not translator.running


def test_other_dialogs_are_dismissed_and_notices_ignored() -> None:
    translator = ready()
    out = translator.receive(line(type="extension_ui_request", id="u1", method="select",
                                  title="Pick", options=["a"]), 0.0)
    assert sends(out) == [{"type": "extension_ui_response", "id": "u1", "cancelled": True}]
    out = translator.receive(line(type="extension_ui_request", id="u2", method="confirm",
                                  title="Sure?", message="x"), 0.0)
    assert sends(out) == [{"type": "extension_ui_response", "id": "u2", "cancelled": True}]
    assert translator.receive(line(type="extension_ui_request", id="u3", method="notify",
                                   message="hi"), 0.0) == []


def test_decide_maps_decisions_and_refuses_unknown_ids() -> None:
    translator = ready()
    question = json.dumps({"tool": "mcp_thing", "callId": "c1", "input": {"a": 1}})
    (ask,) = translator.receive(line(type="extension_ui_request", id="q1", method="confirm",
                                     title="corral.permission", message=question), 0.0)
    assert ask == Permission(permission_id="q1", tool="mcp_thing", kind="other", input={"a": 1},
                             options=["allow", "deny", "allow_always"])
    assert sends(translator.decide("q1", "allow_always", 0.0)) == [
        {"type": "extension_ui_response", "id": "q1", "confirmed": True}]
    with pytest.raises(UnknownPermission):
        translator.decide("q1", "deny", 0.0)


def test_a_gate_question_that_is_not_json_is_a_protocol_error() -> None:
    translator = ready()
    with pytest.raises(ProtocolError):
        translator.receive(line(type="extension_ui_request", id="q", method="confirm",
                                title="corral.permission", message="{oops"), 0.0)


def test_set_model_takes_a_bare_id_of_the_current_provider() -> None:
    translator = ready()
    assert sends(translator.set_model("other", 0.0)) == [
        {"type": "set_model", "id": "corral:2", "provider": "p", "modelId": "other"}]
    assert sends(translator.set_model("openrouter/anthropic/claude", 0.0))[0]["provider"] == "openrouter"
    with pytest.raises(BadRequest):
        translator.set_model("p/", 0.0)


def test_an_unstreamed_message_comes_out_whole_and_an_extension_error_is_reported() -> None:
    translator = ready()
    translator.prompt("go", 0.0)
    message = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
                                                {"type": "text", "text": "whole"}],
               "usage": {"input": 3, "output": 2, "cost": {"total": 0.5}}, "stopReason": "stop"}
    out = translator.receive(line(type="message_end", message=message), 0.0)
    assert out[:2] == [Thought(text="hm"), Assistant(text="whole")]
    translator.receive(line(type="agent_end", messages=[message]), 0.0)
    (result,) = translator.receive(line(type="response", id="corral:3", command="get_state",
                                        success=True, data={}), 0.0)
    assert isinstance(result, Result) and result.cost_usd == 0.5
    (error,) = translator.receive(line(type="extension_error", extensionPath="/x.ts",
                                       event="tool_call", error="boom"), 0.0)
    assert isinstance(error, Error) and error.code == "pi.protocol.extension_error"


def test_bad_options_and_mcp_servers_are_refused_at_create() -> None:
    with pytest.raises(BadRequest):
        PiTranslator(request(options={"extra_args": "--x"}))
    with pytest.raises(BadRequest):
        PiTranslator(request(mcp_servers=[McpServer(name="m", command="x")]))
    PiTranslator(request(permissions=Permissions(mode="ask")))


def test_a_refused_steer_is_reported_and_the_turn_goes_on() -> None:
    translator = ready()
    translator.prompt("go", 0.0)
    translator.steer("more", 0.0)
    (error,) = translator.receive(line(type="response", id="corral:3", command="prompt",
                                       success=False, error="queue full"), 0.0)
    assert isinstance(error, Error) and error.code == "pi.protocol.command_failed"
    assert translator.running


def test_a_steer_left_in_pis_queue_is_reported_at_the_end() -> None:
    translator = ready()
    translator.prompt("go", 0.0)
    translator.steer("late", 0.0)
    translator.receive(line(type="agent_end", messages=[]), 0.0)
    out = translator.receive(line(type="response", id="corral:4", command="get_state",
                                  success=True, data={"pendingMessageCount": 1}), 0.0)
    assert [type(e) for e in out] == [Error, Result]
    assert isinstance(out[0], Error) and out[0].code == "pi.protocol.steer_late"
