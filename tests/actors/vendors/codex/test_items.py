"""Thread items as tool events, other threads, retried errors and rate-limit windows."""

from __future__ import annotations

from .frames import events, frame, ready, turn


def test_other_threads_are_ignored() -> None:
    t = ready()
    turn(t)
    delta = {"threadId": "sub-agent", "turnId": "x", "itemId": "m", "delta": "hidden"}
    assert t.receive(frame({"method": "item/agentMessage/delta", "params": delta}), 0.0) == []
    ended = {"threadId": "sub-agent", "turn": {"id": "x", "status": "completed"}}
    assert t.receive(frame({"method": "turn/completed", "params": ended}), 0.0) == []
    assert t.turn_id == "t1"


def test_retried_errors_are_not_reported() -> None:
    t = ready()
    error = {"error": {"message": "stream disconnected", "codexErrorInfo": None},
             "willRetry": True, "threadId": "th", "turnId": "t1"}
    assert t.receive(frame({"method": "error", "params": error}), 0.0) == []


def test_mcp_tool_items_are_named_like_claude_and_failures_flagged() -> None:
    t = ready()
    item = {"type": "mcpToolCall", "id": "m1", "server": "files", "tool": "read",
            "status": "failed", "arguments": {"p": 1}, "result": None,
            "error": {"message": "denied"}}
    (tool,) = events(t.receive(frame({"method": "item/completed", "params": {
        "threadId": "th", "item": item}}), 0.0))
    assert (tool.name, tool.kind, tool.input, tool.output, tool.is_error) == (
        "mcp__files__read", "mcp", {"p": 1}, "denied", True)


def test_unknown_item_types_are_other_tools_and_messages_are_not() -> None:
    t = ready()
    new = {"type": "holodeck", "id": "h1"}
    (tool,) = events(t.receive(frame({"method": "item/started", "params": {"item": new}}), 0.0))
    assert (tool.name, tool.kind, tool.phase) == ("holodeck", "other", "started")
    plan = {"type": "plan", "id": "p1", "text": "1. x"}
    assert t.receive(frame({"method": "item/completed", "params": {"item": plan}}), 0.0) == []


def test_rate_limit_windows_become_limits() -> None:
    t = ready()
    snapshot = {"primary": {"usedPercent": 12.5, "windowDurationMins": 300, "resetsAt": 0},
                "secondary": None}
    (limits,) = events(t.receive(frame({"method": "account/rateLimits/updated",
                                          "params": {"rateLimits": snapshot}}), 0.0))
    assert [(w.name, w.used_percent, w.resets_at) for w in limits.windows] == [
        ("five_hour", 12.5, "1970-01-01T00:00:00.000Z")]


def test_a_streamed_message_is_not_repeated_whole_but_an_unstreamed_one_is() -> None:
    from protocol.events import Assistant

    t = ready()
    turn(t)
    delta = {"threadId": "th", "turnId": "t1", "itemId": "m1", "delta": "Hel"}
    assert events(t.receive(frame({"method": "item/agentMessage/delta", "params": delta}), 0.0)) == [
        Assistant(text="Hel", delta=True)]
    streamed = {"type": "agentMessage", "id": "m1", "text": "Hel"}
    assert t.receive(frame({"method": "item/completed", "params": {
        "threadId": "th", "item": streamed}}), 0.0) == []
    whole = {"type": "agentMessage", "id": "m2", "text": "All at once."}
    assert events(t.receive(frame({"method": "item/completed", "params": {
        "threadId": "th", "item": whole}}), 0.0)) == [Assistant(text="All at once.", delta=False)]
