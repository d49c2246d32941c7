"""The ACP translator on scripted agent lines: handshake, setup, garbage, updates, permissions,
the client side of fs (confinement, writes under the permission policy), cancel and models."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.harness import HarnessRequest, Send, Work
from actors.vendors.acp import PROFILES, AcpTranslator, jobs
from protocol.errors import ProtocolError, SessionBusy, Unsupported, UnknownPermission
from protocol.events import (
    Assistant, Error, Init, LimitWindow, Limits, Permission, Result, Thought, Tool,
)
from protocol.models import Permissions

CWD = "/work/project"


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **obj}).encode()


def sent(outputs: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(o.data) for o in outputs if isinstance(o, Send)]


def events(outputs: list[Any]) -> list[Any]:
    return [o for o in outputs if not isinstance(o, (Send, Work))]


def opened(agent: str = "gemini", *, result: dict[str, Any] | None = None,
           init: dict[str, Any] | None = None, **fields: Any) -> AcpTranslator:
    """A translator whose session is open (every setup request answered)."""
    request = HarnessRequest(**{"session_id": "s", "cwd": CWD, "work_dir": "/r",
                                "permissions": Permissions(mode="inherit"), **fields})
    t = AcpTranslator(request, PROFILES[agent])
    t.start(0.0)
    out = t.receive(line({"id": 1, "result": {"protocolVersion": 1, **(init or {})}}), 0.0)
    (new,) = sent(out)
    out = t.receive(line({"id": new["id"], "result": {"sessionId": "sess-1", **(result or {})}}),
                    0.0)
    for frame in sent(out):
        t.receive(line({"id": frame["id"], "result": {}}), 0.0)
    assert t.ready
    return t


def update(variant: str, **fields: Any) -> bytes:
    return line({"method": "session/update",
                 "params": {"sessionId": "sess-1", "update": {"sessionUpdate": variant, **fields}}})


def test_the_handshake_advertises_client_services_only_when_the_session_runs_work() -> None:
    for runs_work in (False, True):
        request = HarnessRequest(session_id="s", cwd=CWD, work_dir="/r", runs_work=runs_work)
        (init,) = sent(AcpTranslator(request, PROFILES["gemini"]).start(0.0))
        caps = init["params"]["clientCapabilities"]
        assert (init["method"], init["params"]["protocolVersion"]) == ("initialize", 1)
        assert caps["terminal"] is runs_work
        assert caps["fs"] == {"readTextFile": runs_work, "writeTextFile": runs_work}


def test_setup_sets_the_mode_and_model_before_ready() -> None:
    request = HarnessRequest(session_id="s", cwd=CWD, work_dir="/r", model="haiku",
                             permissions=Permissions(mode="auto"))
    t = AcpTranslator(request, PROFILES["claude-acp"])
    t.start(0.0)
    (new,) = sent(t.receive(line({"id": 1, "result": {"protocolVersion": 1}}), 0.0))
    assert new["method"] == "session/new" and new["params"] == {"cwd": CWD, "mcpServers": []}
    out = t.receive(line({"id": 2, "result": {
        "sessionId": "x", "modes": {"currentModeId": "default"},
        "models": {"currentModelId": "default", "availableModels": [{"modelId": "haiku"}]}}}), 0.0)
    assert events(out) == [Init(vendor_session_id="x", model="default", cwd=CWD)]
    mode, model = sent(out)
    assert mode["method"] == "session/set_mode" and mode["params"]["modeId"] == "bypassPermissions"
    assert model["method"] == "session/set_model" and model["params"]["modelId"] == "haiku"
    assert not t.ready
    t.receive(line({"id": mode["id"], "result": {}}), 0.0)
    err = t.receive(line({"id": model["id"], "error": {"code": -32602, "message": "no"}}), 0.0)
    assert [type(e) for e in err] == [Error] and t.ready
    assert t.models() == ["haiku"]


def test_garbage_and_answers_to_unknown_ids_are_protocol_errors() -> None:
    t = opened()
    for bad in (b"not json", b"[1,2]", line({"id": 99, "result": {}})):
        with pytest.raises(ProtocolError):
            t.receive(bad, 0.0)
    assert t.receive(b"   \r\n", 0.0) == []
    assert t.receive(update("a_future_update", x=1), 0.0) == []


def test_chunks_tools_plans_modes_and_usage_map_onto_events() -> None:
    t = opened()
    (prompt,) = sent(t.prompt("hi", 0.0))
    assert prompt["params"]["prompt"] == [{"type": "text", "text": "hi"}]
    with pytest.raises(SessionBusy):
        t.prompt("again", 0.0)
    assert t.steer("more", 0.0) is None
    out = [*t.receive(update("agent_thought_chunk", content={"type": "text", "text": "hm"}), 0.0),
           *t.receive(update("agent_message_chunk", content={"type": "text", "text": "Hi"}), 0.0),
           *t.receive(update("tool_call", toolCallId="read_file__1", title="Read a.txt",
                             kind="read", status="pending",
                             locations=[{"path": "/work/project/a.txt"}]), 0.0),
           *t.receive(update("tool_call_update", toolCallId="read_file__1", status="completed",
                             content=[{"type": "content",
                                       "content": {"type": "text", "text": "abc"}}]), 0.0),
           *t.receive(update("plan", entries=[{"content": "x", "status": "pending"}]), 0.0),
           *t.receive(update("plan", entries=[{"content": "x", "status": "completed"}]), 0.0),
           *t.receive(update("current_mode_update", currentModeId="plan"), 0.0),
           *t.receive(update("usage_update", used=250, size=1000), 0.0)]
    tool_input = {"title": "Read a.txt", "paths": ["/work/project/a.txt"]}
    assert out == [
        Thought(text="hm", delta=True), Assistant(text="Hi", delta=True),
        Tool(call_id="read_file__1", name="read_file", kind="read", phase="started",
             input=tool_input),
        Tool(call_id="read_file__1", name="read_file", kind="read", phase="completed",
             input=tool_input, output="abc"),
        Tool(call_id="plan-1", name="plan", phase="started",
             input={"entries": [{"content": "x", "status": "pending"}]}),
        Tool(call_id="plan-1", name="plan", phase="updated",
             input={"entries": [{"content": "x", "status": "completed"}]}),
        Tool(call_id="mode-1", name="switch_mode", phase="started", input={"mode": "plan"}),
        Tool(call_id="mode-1", name="switch_mode", phase="completed", input={"mode": "plan"}),
        Limits(windows=[LimitWindow(name="context", used_percent=25.0)]),
    ]
    end = t.receive(line({"id": prompt["id"], "result": {
        "stopReason": "end_turn",
        "_meta": {"quota": {"token_count": {"input_tokens": 7, "output_tokens": 3}}}}}), 0.0)
    assert [type(e) for e in end] == [Tool, Result]
    assert end[0].phase == "completed" and end[0].name == "plan"
    assert (end[1].stop_reason, end[1].usage.input_tokens, end[1].usage.output_tokens) == (
        "end_turn", 7, 3)


def permission_request(rid: int, call_id: str, kind: str = "execute",
                       **tool: Any) -> bytes:
    return line({"id": rid, "method": "session/request_permission", "params": {
        "sessionId": "sess-1",
        "toolCall": {"toolCallId": call_id, "title": "Run it", "kind": kind, **tool},
        "options": [{"optionId": "yes", "kind": "allow_once", "name": "Yes"},
                    {"optionId": "always", "kind": "allow_always", "name": "Always"},
                    {"optionId": "no", "kind": "reject_once", "name": "No"}]}})


@pytest.mark.parametrize(("decision", "option"), [
    ("allow", "yes"), ("allow_always", "always"), ("deny", "no")])
def test_a_decision_picks_the_agents_option_by_kind(decision: Any, option: str) -> None:
    t = opened()
    t.prompt("go", 0.0)
    out = t.receive(permission_request(0, "c1", rawInput={"command": "ls"}), 0.0)
    assert events(out) == [
        Tool(call_id="c1", name="execute", kind="exec", input={"command": "ls"}),
        Permission(permission_id="c1", tool="execute", kind="exec", input={"command": "ls"},
                   options=["allow", "deny", "allow_always"])]
    (answer,) = sent(t.decide("c1", decision, 0.0))
    assert answer == {"jsonrpc": "2.0", "id": 0,
                      "result": {"outcome": {"outcome": "selected", "optionId": option}}}
    with pytest.raises(UnknownPermission):
        t.decide("c1", "allow", 0.0)


def test_a_permission_shows_the_input_it_carries_over_an_earlier_partial_one() -> None:
    # OpenCode 1.18.33 announces a bash call with only its cwd and may ask for permission (with
    # the command) before the update that fills the input in.
    t = opened()
    t.prompt("go", 0.0)
    t.receive(update("tool_call", toolCallId="c1", title="bash", kind="execute",
                     status="pending", rawInput={"cwd": CWD}), 0.0)
    out = t.receive(permission_request(0, "c1", rawInput={"command": "touch x"}), 0.0)
    (ask,) = events(out)
    assert isinstance(ask, Permission) and ask.input == {"cwd": CWD, "command": "touch x"}


def test_interrupt_cancels_open_requests_and_the_turn_ends_interrupted() -> None:
    t = opened()
    (prompt,) = sent(t.prompt("go", 0.0))
    t.receive(permission_request(5, "c1", title="echo hi"), 0.0)
    cancel = sent(t.interrupt(0.0))
    assert cancel == [
        {"jsonrpc": "2.0", "id": 5, "result": {"outcome": {"outcome": "cancelled"}}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "sess-1"}}]
    (result,) = t.receive(line({"id": prompt["id"], "result": {"stopReason": "cancelled"}}), 0.0)
    assert (result.stop_reason, result.is_error) == ("interrupted", False)
    (prompt,) = sent(t.prompt("again", 0.0))
    t.interrupt(0.0)
    (result,) = t.receive(line({"id": prompt["id"], "error": {"code": -32603, "message": "x"}}),
                          0.0)
    assert result.stop_reason == "interrupted"


def test_a_turn_the_agent_cancels_itself_after_a_refusal_ends_normally() -> None:
    # codex-acp 0.16.0 offers no rejection that lets the model go on: its reject option "abort"
    # ends the prompt "cancelled" though no client interrupted.
    t = opened()
    (prompt,) = sent(t.prompt("go", 0.0))
    t.receive(permission_request(5, "c1", rawInput={"command": "touch x"}), 0.0)
    t.decide("c1", "deny", 0.0)
    out = t.receive(line({"id": prompt["id"], "result": {"stopReason": "cancelled"}}), 0.0)
    (result,) = [e for e in out if isinstance(e, Result)]
    assert (result.stop_reason, result.is_error) == ("end_turn", False)


def test_a_failed_prompt_is_a_classified_error_and_an_error_result() -> None:
    t = opened()
    (prompt,) = sent(t.prompt("go", 0.0))
    err, result = t.receive(line({"id": prompt["id"], "error": {
        "code": 429, "message": "Resource exhausted: sk-abcdefgh123"}}), 0.0)
    assert (err.code, err.error_class) == ("gemini.limit.rate_limited", "limit")
    assert "sk-abcdefgh123" not in err.message
    assert (result.stop_reason, result.is_error) == ("error", True)


def test_a_google_key_in_a_failed_prompt_is_masked() -> None:
    t = opened()
    (prompt,) = sent(t.prompt("go", 0.0))
    err, _ = t.receive(line({"id": prompt["id"], "error": {
        "code": 400, "message": "API key not valid: AIzaSyD-0123456789abcdefghijklmnopqrst"}}), 0.0)
    assert "SyD-0123456789abcdefghijklmnopqrst" not in err.message and "AIz***" in err.message


def test_a_failed_load_starts_a_new_session_and_says_so() -> None:
    request = HarnessRequest(session_id="s", cwd=CWD, work_dir="/r", resume="old")
    t = AcpTranslator(request, PROFILES["gemini"])
    t.start(0.0)
    (load,) = sent(t.receive(line({"id": 1, "result": {
        "protocolVersion": 1, "agentCapabilities": {"loadSession": True}}}), 0.0))
    assert (load["method"], load["params"]["sessionId"]) == ("session/load", "old")
    out = t.receive(line({"id": 2, "error": {"code": -32603, "message": "Internal error",
                                             "data": {"details": "No previous sessions"}}}), 0.0)
    (lost,) = events(out)
    assert lost.code == "gemini.protocol.resume_failed" and "No previous sessions" in lost.message
    assert sent(out)[0]["method"] == "session/new"
    no_load = AcpTranslator(request, PROFILES["copilot"])
    no_load.start(0.0)
    out = no_load.receive(line({"id": 1, "result": {"protocolVersion": 1}}), 0.0)
    assert [type(e) for e in events(out)] == [Error]
    assert sent(out)[0]["method"] == "session/new"


def test_set_model_by_models_by_config_option_or_unsupported() -> None:
    listed = opened(result={"models": {"currentModelId": "a", "availableModels": []}})
    (frame,) = sent(listed.set_model("b", 0.0))
    assert (frame["method"], frame["params"]["modelId"]) == ("session/set_model", "b")
    configured = opened("copilot", result={"configOptions": [
        {"id": "model", "category": "model", "currentValue": "a", "options": []}]})
    (frame,) = sent(configured.set_model("b", 0.0))
    assert frame["method"] == "session/set_config_option"
    assert (frame["params"]["configId"], frame["params"]["value"]) == ("model", "b")
    with pytest.raises(Unsupported):
        opened().set_model("b", 0.0)


def test_the_profiles_auth_method_is_called_when_the_agent_offers_it() -> None:
    request = HarnessRequest(session_id="s", cwd=CWD, work_dir="/r")
    t = AcpTranslator(request, PROFILES["cursor"])
    t.start(0.0)
    (auth,) = sent(t.receive(line({"id": 1, "result": {
        "protocolVersion": 1, "authMethods": [{"id": "cursor_login", "name": "Login"}]}}), 0.0))
    assert auth == {"jsonrpc": "2.0", "id": 2, "method": "authenticate",
                    "params": {"methodId": "cursor_login"}}
    (new,) = sent(t.receive(line({"id": 2, "result": {}}), 0.0))
    assert new["method"] == "session/new"


# --- the client side of fs ----------------------------------------------------------------------

def fs_request(rid: int, method: str, **params: Any) -> bytes:
    return line({"id": rid, "method": method, "params": {"sessionId": "sess-1", **params}})


def test_without_work_fs_and_terminal_requests_are_refused_at_once() -> None:
    t = opened()
    (answer,) = sent(t.receive(fs_request(3, "fs/read_text_file", path=f"{CWD}/a"), 0.0))
    assert answer["error"]["code"] == -32601


def test_reads_and_writes_outside_the_cwd_are_refused() -> None:
    t = opened(runs_work=True)
    (answer,) = sent(t.receive(fs_request(1, "fs/read_text_file", path="/etc/passwd"), 0.0))
    assert answer["error"]["code"] == jobs.DENIED
    out = t.receive(fs_request(2, "fs/write_text_file", path=f"{CWD}/../x", content="y"), 0.0)
    assert [e.phase for e in events(out)] == ["started", "completed"]
    assert events(out)[1].is_error and sent(out)[0]["error"]["code"] == jobs.DENIED
    (answer,) = sent(t.receive(fs_request(3, "terminal/create", command="ls", cwd="/tmp"), 0.0))
    assert answer["error"]["code"] == jobs.DENIED


def test_an_unasked_write_is_a_permission_of_kind_edit_then_a_tool() -> None:
    t = opened("gemini", runs_work=True)
    t.prompt("go", 0.0)
    path = f"{CWD}/new.txt"
    (ask,) = t.receive(fs_request(4, "fs/write_text_file", path=path, content="hello"), 0.0)
    assert isinstance(ask, Permission) and (ask.tool, ask.kind) == ("write_text_file", "edit")
    assert ask.input == {"path": path, "content": "hello"}
    started, work = t.decide(ask.permission_id, "allow", 0.0)
    assert isinstance(started, Tool) and started.phase == "started"
    assert isinstance(work, Work) and work.job == jobs.WriteFile(path=path, content="hello")
    done = t.finished(work.id, jobs.Done(None), 0.0)
    assert isinstance(done[0], Tool) and (done[0].phase, done[0].is_error) == ("completed", False)
    assert sent(done) == [{"jsonrpc": "2.0", "id": 4, "result": None}]
    (ask,) = t.receive(fs_request(5, "fs/write_text_file", path=path, content="x"), 0.0)
    denied = t.decide(ask.permission_id, "deny", 0.0)
    assert events(denied)[0].is_error and sent(denied)[0]["error"]["code"] == jobs.DENIED


def test_a_write_the_agent_already_asked_for_goes_through_and_a_missing_file_reads_empty() -> None:
    t = opened("gemini", runs_work=True)
    t.prompt("go", 0.0)
    path = f"{CWD}/a.txt"
    (read,) = t.receive(fs_request(0, "fs/read_text_file", path=path), 0.0)
    assert read.job == jobs.ReadFile(path=path, missing_empty=True)  # Gemini's quirk
    t.receive(permission_request(1, "write_file__7", kind="edit",
                                 locations=[{"path": path}]), 0.0)
    t.decide("write_file__7", "allow", 0.0)
    started, work = t.receive(fs_request(2, "fs/write_text_file", path=path, content="z"), 0.0)
    assert isinstance(started, Tool) and isinstance(work, Work)
    failed = t.finished(work.id, jobs.Failed(jobs.DENIED, "disk full"), 0.0)
    assert events(failed)[0].is_error and events(failed)[0].output == "disk full"
    assert sent(failed)[0]["error"] == {"code": jobs.DENIED, "message": "disk full"}


def test_an_interrupt_refuses_writes_still_waiting_for_a_decision() -> None:
    t = opened("claude-acp", runs_work=True)
    t.prompt("go", 0.0)
    t.receive(fs_request(7, "fs/write_text_file", path=f"{CWD}/b", content="q"), 0.0)
    refused, cancel = sent(t.interrupt(0.0))
    assert refused["id"] == 7 and refused["error"]["message"] == "cancelled"
    assert cancel["method"] == "session/cancel"


def test_an_agent_that_speaks_another_protocol_version_is_an_error_and_never_ready() -> None:
    t = AcpTranslator(HarnessRequest(session_id="s", cwd=CWD, work_dir="/r"), PROFILES["omp"])
    t.start(0.0)
    (error,) = t.receive(line({"id": 1, "result": {"protocolVersion": 2}}), 0.0)
    assert isinstance(error, Error) and error.code == "omp.protocol.version"
    assert not t.ready


def test_the_state_directory_is_refused_before_any_permission_is_asked() -> None:
    t = opened(runs_work=True, state_dir=f"{CWD}/.state")
    t.prompt("go", 0.0)
    out = t.receive(fs_request(1, "fs/write_text_file", path=f"{CWD}/.state/token", content="x"),
                    0.0)
    assert not any(isinstance(e, Permission) for e in out)
    assert [e.phase for e in events(out)] == ["started", "completed"] and events(out)[1].is_error
    (answer,) = sent(out)
    assert answer["error"]["code"] == jobs.DENIED
    assert "state directory" in answer["error"]["message"]
    (answer,) = sent(t.receive(fs_request(2, "fs/read_text_file",
                                          path=f"{CWD}/a/../.state/ledger.json"), 0.0))
    assert "state directory" in answer["error"]["message"]
