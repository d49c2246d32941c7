"""The OpenCode translator over lines recorded from a real ``opencode serve`` 1.18.33.

Each recording (``recordings/*.ndjson``, made by ``record.py``: the session's SSE events, the
transport's answers, and the translator's calls) is replayed through fresh translators (one per
``meta`` line: ``resume`` has two attachments); each must make exactly the recorded calls.
Synthetic lines cover stale idles, other clients' replies, failed calls and garbage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.harness import HarnessRequest, Output, Send
from actors.vendors.opencode import OpenCodeTranslator, permission_rules
from protocol.errors import BadRequest, ProtocolError, SessionBusy, UnknownPermission
from protocol.events import (
    Assistant, Error, Event, Init, Permission, PermissionDecided, Result, Thought, Tool, Usage,
)
from protocol.models import Permissions

RECORDINGS = Path(__file__).resolve().parent / "recordings"


class Replay:
    def __init__(self, name: str) -> None:
        self.events: list[Event] = []
        self.sent: list[Any] = []
        self.recorded: list[Any] = []
        self.requests: list[HarnessRequest] = []
        translator: OpenCodeTranslator | None = None
        for raw in (RECORDINGS / f"{name}.ndjson").read_text().splitlines():
            line = json.loads(raw)
            if line["dir"] == "meta":
                self.requests.append(msgspec.convert(line["request"], HarnessRequest))
                translator = OpenCodeTranslator(self.requests[-1])
            elif translator is None:
                raise AssertionError("a recording starts with meta")
            elif line["dir"] == "call":
                self._take(getattr(translator, line["call"])(*line["args"], 0.0) or [])
            elif line["dir"] == "recv":
                self._take(translator.receive(json.dumps(line["frame"]).encode(), 0.0))
            else:
                self.recorded.append(line["frame"])
        self.translator = translator

    def _take(self, outputs: list[Output]) -> None:
        for output in outputs:
            if isinstance(output, Send):
                self.sent.append(json.loads(output.data))
            else:
                self.events.append(output)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def said(self) -> str:
        return "".join(e.text for e in self.of(Assistant))


NAMES = sorted(p.stem for p in RECORDINGS.glob("*.ndjson"))


@pytest.mark.parametrize("name", NAMES)
def test_replay_makes_the_recorded_calls(name: str) -> None:
    replay = Replay(name)
    assert replay.sent == replay.recorded
    assert replay.events[0] == replay.of(Init)[0]
    assert replay.of(Init)[0].vendor_session_id.startswith("ses_")
    assert all(call["path"].endswith("?directory=" + replay.requests[0].cwd.replace("/", "%2F"))
               for call in replay.sent)


def test_text_turn_streams_and_ends_once() -> None:
    replay = Replay("text_turn")
    assert replay.said() == "Hello from the fake model."
    assert all(e.delta for e in replay.of(Assistant))
    assert "".join(t.text for t in replay.of(Thought)) == "The user greets me."
    (result,) = replay.of(Result)
    assert result == Result(stop_reason="end_turn", usage=Usage(input_tokens=20, output_tokens=5))
    create = replay.sent[0]
    assert (create["method"], create["body"]["permission"]) == ("POST", permission_rules("auto"))


def test_tool_turn_reports_the_bash_call() -> None:
    replay = Replay("tool_turn")
    tools = [t for t in replay.of(Tool) if t.call_id == replay.of(Tool)[0].call_id]
    assert [t.phase for t in tools][0] == "started" and tools[-1].phase == "completed"
    assert tools[0].input["command"] == "printf made > made.txt && echo created"
    assert (tools[-1].output, tools[-1].is_error, tools[-1].kind) == ("created\n", False, "exec")
    first, second = replay.of(Result)
    assert first.usage.input_tokens == 40 and second.stop_reason == "end_turn"
    assert replay.said() == "I created made.txt.Second turn answer."


def test_permissions_deny_ends_the_turn_and_allow_writes() -> None:
    replay = Replay("permissions")
    assert replay.requests[0].permissions.mode == "ask"
    denied, allowed = replay.of(Permission)
    assert (denied.tool, denied.kind, denied.input) == ("bash", "exec", {"command": "touch denied.txt"})
    assert (allowed.tool, allowed.kind) == ("edit", "edit")
    assert allowed.input["filepath"].endswith("/work/allowed.txt")
    replies = [c for c in replay.sent if "/permission/" in c["path"]]
    assert [c["body"] for c in replies] == [{"reply": "reject"}, {"reply": "once"}]
    completed = [t for t in replay.of(Tool) if t.phase == "completed"]
    assert [t.is_error for t in completed] == [True, False]
    assert [r.stop_reason for r in replay.of(Result)] == ["end_turn", "end_turn"]
    assert replay.of(PermissionDecided) == []  # our own replies are not echoed back


def test_interrupt_aborts_and_the_next_turn_is_clean() -> None:
    replay = Replay("interrupt")
    assert any(c["path"].split("?")[0].endswith("/abort") for c in replay.sent)
    assert [(r.stop_reason, r.is_error) for r in replay.of(Result)] == [
        ("interrupted", False), ("end_turn", False)]
    assert replay.said().endswith("After the interrupt.")


def test_a_provider_error_is_classified_and_does_not_leak_into_the_next_turn() -> None:
    replay = Replay("errors")
    assert [(r.stop_reason, r.is_error) for r in replay.of(Result)] == [
        ("error", True), ("end_turn", False)]
    assert [e.code for e in replay.of(Error)] == ["opencode.auth.provider"]


def test_set_model_is_sent_with_the_next_prompt() -> None:
    replay = Replay("set_model")
    prompt = next(c for c in replay.sent if c["path"].split("?")[0].endswith("/prompt_async"))
    assert prompt["body"]["model"] == {"providerID": "fake", "modelID": "fake-other"}


def test_resume_reads_the_session_in_a_new_attachment() -> None:
    replay = Replay("resume")
    first, second = replay.of(Init)
    assert first.vendor_session_id == second.vendor_session_id
    assert replay.requests[1].resume == first.vendor_session_id
    assert replay.sent[2]["method"] == "GET"
    assert replay.said() == "Noted: apricot.Apricot."


# --- synthetic lines -------------------------------------------------------------------------

def request(**fields: Any) -> HarnessRequest:
    return HarnessRequest(session_id="s", cwd="/w", work_dir="/r", **fields)


def answer(call_id: int, status: int = 200, body: Any = None) -> bytes:
    return json.dumps({"type": "corral.answer", "id": call_id, "status": status,
                       "body": body}).encode()


def event(kind: str, **props: Any) -> bytes:
    return json.dumps({"type": kind, "properties": props}).encode()


def ready(**fields: Any) -> OpenCodeTranslator:
    translator = OpenCodeTranslator(request(**fields))
    translator.start(0.0)
    (init,) = translator.receive(answer(1, body={"id": "ses_1"}), 0.0)
    assert init == Init(vendor_session_id="ses_1", cwd="/w", tools=[])
    return translator


def sends(outputs: list[Output]) -> list[Any]:
    return [json.loads(o.data) for o in outputs if isinstance(o, Send)]


def test_an_idle_before_the_turns_busy_is_stale() -> None:
    translator = ready()
    translator.prompt("go", 0.0)
    assert translator.receive(event("session.idle", sessionID="ses_1"), 0.0) == []
    with pytest.raises(SessionBusy):
        translator.prompt("again", 0.0)
    translator.receive(event("session.status", sessionID="ses_1", status={"type": "busy"}), 0.0)
    out = translator.receive(event("session.status", sessionID="ses_1", status={"type": "idle"}), 0.0)
    assert out == [Result(stop_reason="end_turn")]
    assert translator.receive(event("session.idle", sessionID="ses_1"), 0.0) == []


def test_a_failed_prompt_call_ends_the_turn() -> None:
    translator = ready()
    translator.prompt("go", 0.0)
    out = translator.receive(answer(2, status=400, body={"error": "bad"}), 0.0)
    assert [type(e) for e in out] == [Error, Result]
    assert isinstance(out[0], Error) and out[0].code == "opencode.protocol.bad_request"


def test_a_google_key_in_a_session_error_is_masked() -> None:
    translator = ready()
    translator.prompt("go", 0.0)
    (error,) = translator.receive(event("session.error", sessionID="ses_1", error={
        "name": "APIError", "data": {"message": "API key not valid: AIzaSyD-0123456789abcdefghijklmnopqrst"}}), 0.0)
    assert isinstance(error, Error) and error.code == "opencode.auth.provider"
    assert "SyD-0123456789abcdefghijklmnopqrst" not in error.message and "AIz***" in error.message


def test_a_lost_session_is_created_anew_on_resume() -> None:
    translator = OpenCodeTranslator(request(resume="ses_gone"))
    (read,) = sends(translator.start(0.0))
    assert (read["method"], read["path"]) == ("GET", "/session/ses_gone?directory=%2Fw")
    out = translator.receive(answer(1, status=404, body={"name": "NotFoundError"}), 0.0)
    assert isinstance(out[0], Error) and out[0].code == "opencode.protocol.resume_failed"
    assert sends(out)[0]["method"] == "POST"


def test_a_reply_from_another_client_is_reported_and_decide_refuses_it_after() -> None:
    translator = ready(permissions=Permissions(mode="ask"))
    (ask,) = translator.receive(event("permission.asked", id="per_1", sessionID="ses_1",
                                      permission="webfetch", patterns=["https://x"]), 0.0)
    assert ask == Permission(permission_id="per_1", tool="webfetch", kind="other",
                             input={"patterns": ["https://x"]},
                             options=["allow", "deny", "allow_always"])
    out = translator.receive(event("permission.replied", sessionID="ses_1", requestID="per_1",
                                   reply="always"), 0.0)
    assert out == [PermissionDecided(permission_id="per_1", decision="allow_always", by="session")]
    with pytest.raises(UnknownPermission):
        translator.decide("per_1", "allow", 0.0)


def test_interrupt_rejects_open_requests_then_aborts() -> None:
    translator = ready()
    translator.prompt("go", 0.0)
    translator.receive(event("permission.asked", id="per_9", sessionID="ses_1", permission="bash",
                             metadata={"command": "ls"}), 0.0)
    calls = sends(translator.interrupt(0.0))
    assert [(c["path"].split("?")[0], c["body"]) for c in calls] == [
        ("/permission/per_9/reply", {"reply": "reject"}), ("/session/ses_1/abort", None)]


def test_garbage_and_unknown_answers_are_protocol_errors() -> None:
    translator = ready()
    with pytest.raises(ProtocolError):
        translator.receive(b"{nope", 0.0)
    with pytest.raises(ProtocolError):
        translator.receive(answer(99), 0.0)
    assert translator.receive(event("plugin.added", id="x"), 0.0) == []


def test_models_must_name_a_provider() -> None:
    with pytest.raises(BadRequest):
        OpenCodeTranslator(request(model="just-a-model"))
    translator = ready()
    with pytest.raises(BadRequest):
        translator.set_model("nope", 0.0)


def test_permission_rules_per_mode() -> None:
    assert permission_rules("ask") == [{"permission": "edit", "pattern": "*", "action": "ask"},
                                       {"permission": "bash", "pattern": "*", "action": "ask"}]
    assert permission_rules("auto_edit") == permission_rules("ask")
    assert {r["action"] for r in permission_rules("auto")} == {"allow"}
    assert permission_rules("inherit") == []
