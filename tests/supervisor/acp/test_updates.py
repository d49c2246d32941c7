"""corral events as ACP updates (``supervisor.acp.updates``), each checked against the ACP
schema of the ``agent-client-protocol`` SDK: what we send validates as the variant it names,
and validating drops nothing (the SDK salvages bad fields quietly, so the round trip must be
exact)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from acp import schema

from protocol import events as ev
from tests.supervisor.acp.kept import assert_kept
from supervisor.acp.schema import Update
from supervisor.acp.updates import Updates, acp_kind, paths_of, title_of

VARIANTS: dict[str, Any] = {
    "agent_message_chunk": schema.AgentMessageChunk, "agent_thought_chunk": schema.AgentThoughtChunk,
    "user_message_chunk": schema.UserMessageChunk, "tool_call": schema.ToolCallStart,
    "tool_call_update": schema.ToolCallProgress, "plan": schema.AgentPlanUpdate,
    "usage_update": schema.UsageUpdate, "available_commands_update": schema.AvailableCommandsUpdate,
    "current_mode_update": schema.CurrentModeUpdate,
}


def wire(updates: list[Update]) -> list[dict[str, Any]]:
    """The updates as JSON, each validated exactly by the SDK's model of its variant."""
    out = []
    for update in updates:
        data = json.loads(msgspec.json.encode(update))
        model = VARIANTS[data["sessionUpdate"]].model_validate(data)
        assert_kept(data, model.model_dump(by_alias=True, mode="json"))
        out.append(data)
    return out


def feed(*events: ev.Event, cwd: str = "/w") -> list[dict[str, Any]]:
    mapper = Updates(cwd)
    return wire([u for event in events for u in mapper.updates(event)])


def test_streamed_text_and_thoughts_are_chunks_and_the_consolidated_copy_is_not_sent_again() -> None:
    sent = feed(ev.Thought(text="hm", delta=True), ev.Assistant(text="he", delta=True),
                ev.Assistant(text="llo", delta=True), ev.Assistant(text="hello"),
                ev.Assistant(text="a whole other message"))
    assert [(u["sessionUpdate"], u["content"]["text"]) for u in sent] == [
        ("agent_thought_chunk", "hm"), ("agent_message_chunk", "he"), ("agent_message_chunk", "llo"),
        ("agent_message_chunk", "a whole other message")]


def test_a_user_event_is_the_users_message() -> None:
    assert feed(ev.User(text="hi", delivery="held")) == [
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}]


def test_a_tool_call_starts_progresses_and_completes_with_its_output() -> None:
    sent = feed(ev.Tool(call_id="t1", name="bash", kind="exec", input={"command": "ls -l\nmore"}),
                ev.Tool(call_id="t1", name="bash", kind="exec", phase="updated", output="a"),
                ev.Tool(call_id="t1", name="bash", kind="exec", phase="completed",
                        input={"command": "ls -l\nmore"}, output="a\nb\n"))
    assert sent == [
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "bash: ls -l", "kind": "execute",
         "status": "in_progress", "rawInput": {"command": "ls -l\nmore"}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress",
         "content": [{"type": "content", "content": {"type": "text", "text": "a"}}]},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
         "content": [{"type": "content", "content": {"type": "text", "text": "a\nb\n"}}],
         "rawOutput": "a\nb\n"},
    ]


def test_a_failed_tool_is_failed_and_an_unannounced_end_starts_it_first() -> None:
    sent = feed(ev.Tool(call_id="t2", name="mcp__fs__read", kind="mcp", phase="completed",
                        input={"path": "a.txt"}, output={"error": "gone"}, is_error=True))
    assert [(u["sessionUpdate"], u.get("status"), u.get("kind")) for u in sent] == [
        ("tool_call", "in_progress", "other"), ("tool_call_update", "failed", None)]
    assert sent[0]["locations"] == [{"path": "/w/a.txt"}]
    assert json.loads(sent[1]["content"][0]["content"]["text"]) == {"error": "gone"}


def test_edits_carry_their_diffs() -> None:
    edit = {"file_path": "src/a.py", "old_string": "x = 1", "new_string": "x = 2"}
    sent = feed(ev.Tool(call_id="e1", name="Edit", kind="edit", input=edit),
                ev.Tool(call_id="e1", name="Edit", kind="edit", phase="completed", input=edit, output="ok"))
    assert sent[0]["locations"] == [{"path": "/w/src/a.py"}] and sent[0]["kind"] == "edit"
    assert sent[1]["content"][1] == {"type": "diff", "path": "/w/src/a.py", "oldText": "x = 1", "newText": "x = 2"}
    write = {"path": "/abs/new.txt", "content": "hello\n"}
    sent = feed(ev.Tool(call_id="w1", name="write", kind="edit", input=write),
                ev.Tool(call_id="w1", name="write", kind="edit", phase="completed"))
    assert sent[1]["content"] == [{"type": "diff", "path": "/abs/new.txt", "newText": "hello\n"}]
    multi = {"file_path": "b.py", "edits": [{"old_string": "a", "new_string": "b"},
                                             {"old_string": "c", "new_string": "d"}]}
    sent = feed(ev.Tool(call_id="m1", name="MultiEdit", kind="edit", input=multi),
                ev.Tool(call_id="m1", name="MultiEdit", kind="edit", phase="completed", input=multi))
    assert [(d["oldText"], d["newText"]) for d in sent[1]["content"]] == [("a", "b"), ("c", "d")]
    failed = feed(ev.Tool(call_id="f1", name="Edit", kind="edit", input=edit),
                  ev.Tool(call_id="f1", name="Edit", kind="edit", phase="completed", is_error=True,
                          output="no match"))
    assert [c["type"] for c in failed[1]["content"]] == ["content"]  # a failed edit changed nothing


@pytest.mark.parametrize(("name", "items", "entries"), [
    ("TodoWrite", {"todos": [{"content": "read", "status": "completed", "activeForm": "Reading"},
                             {"content": "write", "status": "in_progress"}]},
     [("read", "completed"), ("write", "in_progress")]),
    ("update_plan", {"plan": [{"step": "one", "status": "pending"}]}, [("one", "pending")]),
    ("plan", {"entries": [{"content": "x", "priority": "high", "status": "completed"}]}, [("x", "completed")]),
])
def test_plan_tools_are_plans(name: str, items: dict[str, Any], entries: list[tuple[str, str]]) -> None:
    sent = feed(ev.Tool(call_id="p", name=name, input=items),
                ev.Tool(call_id="p", name=name, phase="completed"))
    [plan] = sent
    assert [(e["content"], e["status"]) for e in plan["entries"]] == entries


def test_a_result_reports_its_usage_and_a_compaction_the_window() -> None:
    usage = ev.Usage(input_tokens=100, output_tokens=20, cache_read_tokens=5)
    [first] = feed(ev.Result(stop_reason="end_turn", usage=usage, cost_usd=0.25))
    assert (first["used"], first["size"], first["cost"]) == (125, 0, {"amount": 0.25, "currency": "USD"})
    assert first["_meta"]["corral"]["usage"]["cache_read_tokens"] == 5
    [after] = feed(ev.Compaction(context_tokens=200000), ev.Result(usage=usage))
    assert after["size"] == 200000


def test_commands_and_mode_changes() -> None:
    sent = feed(ev.Init(tools=["bash", "/compact", "/review"]), ev.Init(tools=["/compact", "/review"]),
                ev.PermissionsChanged(mode="auto", by="c-1"))
    assert sent == [
        {"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "compact", "description": "/compact"}, {"name": "review", "description": "/review"}]},
        {"sessionUpdate": "current_mode_update", "currentModeId": "auto"},
    ]
    assert feed(ev.Status(state="idle"), ev.Init(tools=["bash"])) == []


def test_kinds_titles_and_paths() -> None:
    assert [acp_kind(k, n) for k, n in [("read", "Read"), ("edit", "rm"), ("exec", "bash"),
                                         ("other", "WebFetch"), ("mcp", "mcp__x__y"), ("edit", "move_file"),
                                         ("search", "grep"), ("other", "think")]] == [
        "read", "delete", "execute", "fetch", "other", "move", "search", "think"]
    assert title_of("grep", {"pattern": "TODO"}) == "grep: TODO" and title_of("ls", None) == "ls"
    assert paths_of({"path": "../x", "file_path": "/abs"}, "/w/sub") == ["/w/x", "/abs"]
    assert paths_of("not a dict", "/w") == []
