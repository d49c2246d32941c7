"""Codex approvals (server→client requests) as permissions, their answers, and cancellation."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.errors import UnknownPermission
from protocol.events import PermissionDecided

from .frames import events, frame, ready, sends, turn


def test_unknown_server_requests_get_an_error_response() -> None:
    t = ready()
    out = t.receive(frame({"id": 7, "method": "item/tool/requestUserInput", "params": {}}), 0.0)
    (reply,) = sends(out)
    assert reply["id"] == 7 and reply["error"]["code"] == -32601
    assert events(out) == []


def _elicitation(meta: Any, mode: str = "form") -> bytes:
    return frame({"id": 4, "method": "mcpServer/elicitation/request", "params": {
        "threadId": "th", "turnId": "t1", "serverName": "srv", "mode": mode, "message": "Fill in",
        "requestedSchema": {"type": "object", "properties": {}}, "_meta": meta}})


def test_elicitations_that_are_not_tool_approvals_are_declined() -> None:
    t = ready()
    for meta in (None, {"codex_approval_kind": "tool_suggestion"}):
        out = t.receive(_elicitation(meta), 0.0)
        assert events(out) == []
        assert sends(out) == [{"id": 4, "result": {"action": "decline", "content": None,
                                                    "_meta": None}}]


@pytest.mark.parametrize(("decision", "persist", "result"), [
    ("allow", ["session"], {"action": "accept", "content": {}, "_meta": None}),
    ("allow_always", ["session", "always"], {"action": "accept", "content": {},
                                             "_meta": {"persist": "session"}}),
    ("allow_always", None, {"action": "accept", "content": {}, "_meta": None}),
    ("deny", ["session"], {"action": "decline", "content": None, "_meta": None}),
])
def test_mcp_tool_approval_answers(decision: Any, persist: Any, result: Any) -> None:
    t = ready()
    meta = {"codex_approval_kind": "mcp_tool_call", "tool_name": "t", "tool_params": {"a": 1},
            "persist": persist}
    (ask,) = events(t.receive(_elicitation(meta), 0.0))
    assert (ask.permission_id, ask.tool, ask.input) == (
        "t1:4", "mcp__srv__t", {"arguments": {"a": 1}, "message": "Fill in"})
    assert sends(t.decide("t1:4", decision, 0.0)) == [{"id": 4, "result": result}]


def test_decide_unknown_permission_raises() -> None:
    with pytest.raises(UnknownPermission):
        ready().decide("42", "allow", 0.0)


def test_file_change_approval_carries_the_changes_of_its_item() -> None:
    t = ready()
    turn(t)
    change = {"path": "/w/a.txt", "kind": {"type": "update", "move_path": None}, "diff": "-a\n+b\n"}
    t.receive(frame({"method": "item/started", "params": {"threadId": "th", "turnId": "t1", "item": {
        "type": "fileChange", "id": "fc1", "changes": [change], "status": "inProgress"}}}), 0.0)
    out = t.receive(frame({"id": "req-1", "method": "item/fileChange/requestApproval", "params": {
        "threadId": "th", "turnId": "t1", "itemId": "fc1", "startedAtMs": 0, "reason": "why"}}), 0.0)
    (ask,) = events(out)
    assert (ask.permission_id, ask.tool, ask.kind) == ("fc1", "apply_patch", "edit")
    assert ask.input == {"changes": [change], "reason": "why"}
    assert sends(t.decide("fc1", "allow", 0.0)) == [{"id": "req-1", "result": {"decision": "accept"}}]


def test_permissions_request_grants_what_was_asked() -> None:
    t = ready()
    asked = {"network": {"enabled": True}, "fileSystem": None}
    t.receive(frame({"id": 3, "method": "item/permissions/requestApproval", "params": {
        "threadId": "th", "turnId": "t1", "itemId": "i", "environmentId": None, "startedAtMs": 0,
        "cwd": "/w", "reason": "net", "permissions": asked}}), 0.0)
    assert sends(t.decide("i", "allow_always", 0.0)) == [
        {"id": 3, "result": {"permissions": {"network": {"enabled": True}}, "scope": "session"}}]


def test_codex_clearing_an_open_approval_cancels_it() -> None:
    t = ready()
    t.receive(frame({"id": 5, "method": "item/commandExecution/requestApproval", "params": {
        "threadId": "th", "turnId": "t1", "itemId": "c", "startedAtMs": 0, "command": "ls",
        "environmentId": None, "kind": "command"}}), 0.0)
    out = t.receive(frame({"method": "serverRequest/resolved", "params": {
        "threadId": "th", "requestId": 5}}), 0.0)
    assert events(out) == [PermissionDecided(permission_id="c", decision="cancelled", by="session")]
    with pytest.raises(UnknownPermission):
        t.decide("c", "allow", 0.0)


def test_goodbye_cancels_open_approvals_and_interrupts_the_turn() -> None:
    t = ready()
    turn(t, "t1")
    t.receive(frame({"id": 0, "method": "item/commandExecution/requestApproval", "params": {
        "itemId": "c", "command": "rm -rf x"}}), 0.0)
    t.receive(_elicitation({"codex_approval_kind": "mcp_tool_call", "tool_name": "x"}), 0.0)
    cancel, elicitation, interrupt = sends(t.goodbye(0.0))
    assert cancel == {"id": 0, "result": {"decision": "cancel"}}
    assert elicitation == {"id": 4, "result": {"action": "cancel", "content": None, "_meta": None}}
    assert interrupt["method"] == "turn/interrupt"
    assert [f["method"] for f in sends(t.goodbye(0.0))] == ["turn/interrupt"]  # answered once


def _command(request_id: int, item_id: str, approval_id: str | None = None) -> bytes:
    return frame({"id": request_id, "method": "item/commandExecution/requestApproval", "params": {
        "threadId": "th", "turnId": "t1", "itemId": item_id, "approvalId": approval_id,
        "startedAtMs": 0, "command": "ls", "kind": "command"}})


def test_permission_ids_survive_a_restart_where_request_ids_repeat() -> None:
    # Codex numbers its requests from 0 in every process; the item (tool call) id does not repeat.
    first, second = ready(), ready()
    (a,) = events(first.receive(_command(0, "call_a"), 0.0))
    (b,) = events(second.receive(_command(0, "call_b"), 0.0))
    assert (a.permission_id, b.permission_id) == ("call_a", "call_b")
    assert sends(second.decide("call_b", "allow", 0.0)) == [
        {"id": 0, "result": {"decision": "accept"}}]


def test_mcp_approvals_without_a_turn_get_a_per_process_id() -> None:
    def ask(t: Any) -> str:
        meta = {"codex_approval_kind": "mcp_tool_call", "tool_name": "t"}
        (event,) = events(t.receive(frame({"id": 0, "method": "mcpServer/elicitation/request",
                                            "params": {"threadId": "th", "serverName": "srv",
                                                       "mode": "form", "message": "m",
                                                       "_meta": meta}}), 0.0))
        return str(event.permission_id)

    first, second = ready(), ready()
    one, two = ask(first), ask(second)
    assert one != two and one.endswith(":0") and two.endswith(":0")
    assert sends(first.decide(one, "deny", 0.0))[0]["id"] == 0


def test_several_approvals_of_one_item_get_distinct_ids() -> None:
    t = ready()
    (plain,) = events(t.receive(_command(0, "call_z"), 0.0))
    (again,) = events(t.receive(_command(1, "call_z"), 0.0))
    (bridged,) = events(t.receive(_command(2, "call_z", approval_id="cb-1"), 0.0))
    assert [e.permission_id for e in (plain, again, bridged)] == ["call_z", "call_z#2", "cb-1"]
    assert sends(t.decide("call_z#2", "deny", 0.0)) == [{"id": 1, "result": {"decision": "decline"}}]
    assert sends(t.decide("call_z", "allow", 0.0)) == [{"id": 0, "result": {"decision": "accept"}}]
    out = t.receive(frame({"method": "serverRequest/resolved", "params": {"requestId": 2}}), 0.0)
    assert events(out) == [PermissionDecided(permission_id="cb-1", decision="cancelled",
                                             by="session")]


def test_legacy_approvals_use_the_call_id() -> None:
    t = ready()
    (ask,) = events(t.receive(frame({"id": 9, "method": "execCommandApproval", "params": {
        "conversationId": "th", "callId": "legacy-1", "command": ["ls"], "cwd": "/w",
        "parsedCmd": []}}), 0.0))
    assert ask.permission_id == "legacy-1"
    assert sends(t.decide("legacy-1", "allow", 0.0)) == [
        {"id": 9, "result": {"decision": "approved"}}]


def test_interrupt_withdraws_open_approvals_so_codex_clearing_them_adds_nothing() -> None:
    # The session reports open permissions cancelled when it interrupts; Codex's later
    # serverRequest/resolved must not produce a second permission_decided.
    t = ready()
    turn(t, "t1")
    t.receive(_command(0, "call_i"), 0.0)
    cancel, interrupt = sends(t.interrupt(0.0))
    assert cancel == {"id": 0, "result": {"decision": "cancel"}}
    assert interrupt["method"] == "turn/interrupt"
    out = t.receive(frame({"method": "serverRequest/resolved", "params": {"requestId": 0}}), 0.0)
    assert out == []
    with pytest.raises(UnknownPermission):
        t.decide("call_i", "allow", 0.0)
