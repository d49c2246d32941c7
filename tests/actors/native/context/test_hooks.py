"""The hook contract, pure: selection by Claude tool name, stdin, and what an outcome means."""

from __future__ import annotations

import json

from actors.native.context.hooks import claude_name, interpret, payload, select
from protocol.native_context import HookCommand, HookMatcher


def hooks(matcher: str, command: str = "x") -> dict:  # type: ignore[type-arg]
    return {"PreToolUse": [HookMatcher(matcher=matcher, hooks=[HookCommand(command=command)])]}


def test_matchers_use_claude_names_as_whole_regular_expressions() -> None:
    assert claude_name("find") == "Glob" and claude_name("mcp__x__y") == "mcp__x__y"
    assert select(hooks("Bash"), "PreToolUse", "bash") != []
    assert select(hooks("Edit|Write"), "PreToolUse", "write") != []
    assert select(hooks("Edit|Write"), "PreToolUse", "bash") == []
    assert select(hooks("Bas"), "PreToolUse", "bash") == []  # the whole name
    assert select(hooks(""), "PreToolUse", "ls") != [] and select(hooks("*"), "PreToolUse", "ls")
    assert select(hooks("(("), "PreToolUse", "bash") == []  # a bad regex matches only itself
    assert select(hooks("Bash"), "PostToolUse", "bash") == []


def test_stdin_carries_claude_fields() -> None:
    body = json.loads(payload("PreToolUse", session_id="n-1", cwd="/w", tool_name="grep",
                              tool_input={"pattern": "x"}))
    assert body == {"session_id": "n-1", "transcript_path": "", "cwd": "/w",
                    "hook_event_name": "PreToolUse", "tool_name": "Grep",
                    "tool_input": {"pattern": "x"}}


def test_outcomes() -> None:
    def run(code: int | None, out: str = "", err: str = "", late: bool = False):  # type: ignore[no-untyped-def]
        return interpret("h", exit_code=code, stdout=out, stderr=err, timed_out=late)

    assert run(2, err="no way\n").block and run(2, err="no way\n").reason == "no way"
    assert run(0).block is False and run(0, out="plain text").warning is None
    assert run(1, err="boom").warning is not None and not run(1).block
    assert run(None, late=True).warning is not None and not run(None, late=True).block
    assert run(0, out='{"decision": "block", "reason": "r"}').reason == "r"
    assert run(0, out='{"continue": false, "stopReason": "s"}').reason == "s"
    deny = run(0, out=json.dumps({"hookSpecificOutput": {
        "permissionDecision": "deny", "permissionDecisionReason": "d"}}))
    assert deny.block and deny.reason == "d"
    rewrite = run(0, out=json.dumps({"hookSpecificOutput": {"updatedInput": {"command": "ls"}}}))
    assert not rewrite.block and rewrite.updated_input == {"command": "ls"}
    assert run(0, out="{not json").warning is not None
