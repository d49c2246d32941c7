"""Instruction files, their tool policies and the active tool set through the worker's ADK agent."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from protocol.events import Error, Init
from protocol.native_context import ContextSettings, HookCommand, HookMatcher
from tests.fakes.model_script import call, say

from .workerkit import WorkerRig, responses, result, run, texts, tools


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def system(request: Any) -> str:
    return str(request.config.system_instruction or "")


def declared(request: Any) -> list[str]:
    return [d.name for t in (request.config.tools or []) for d in (t.function_declarations or [])]


def repo(tmp: Path) -> Path:
    cwd = tmp / "cwd"
    (cwd / ".git").mkdir(parents=True)
    return cwd


def test_instruction_files_reach_the_model_and_nested_ones_after_a_touch(tmp_path: Path) -> None:
    cwd = repo(tmp_path)
    put(tmp_path / "home" / ".claude" / "CLAUDE.md", "USER RULES")
    put(cwd / "AGENTS.md", "ROOT RULES")
    put(cwd / "pkg" / "AGENTS.md", "PKG RULES")
    put(cwd / "pkg" / "f.txt", "x\n")
    script = [call("read", path="pkg/f.txt"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script) as rig:
            await rig.turn("go")
            first, second = (system(r) for r in rig.llm.requests)
        assert "USER RULES" in first and "ROOT RULES" in first and "PKG RULES" not in first
        assert first.index("corral's coding agent") < first.index("USER RULES") \
            < first.index("ROOT RULES")
        assert second.index("USER RULES") < second.index("ROOT RULES") < second.index("PKG RULES")

    run(body)


def test_a_policy_hides_tools_and_rechecks_arguments_before_the_call(tmp_path: Path) -> None:
    cwd = repo(tmp_path)
    put(cwd / "AGENTS.md", "---\nallowed-tools: Read, Bash(echo:*)\n---\nonly reading")
    script = [call("bash", command="touch made-it"), call("bash", command="echo fine"),
              call("write", path="new.txt", content="x"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script) as rig:
            events = await rig.turn("go")
            requests = rig.llm.requests
        init = next(e for e in rig.events if isinstance(e, Init))
        assert init.tools == ["read", "bash"]
        assert declared(requests[0]) == ["read", "bash"]
        done = tools(events, "completed")
        assert [(t.name, t.is_error) for t in done] == [
            ("bash", True), ("bash", False), ("write", True)]
        assert "not allowed here by AGENTS.md" in done[0].output
        assert "fine" in done[1].output
        assert not (cwd / "made-it").exists() and not (cwd / "new.txt").exists()
        assert result(events).stop_reason == "end_turn"

    run(body)


def test_a_budget_eviction_is_reported_as_a_context_warning(tmp_path: Path) -> None:
    cwd = repo(tmp_path)
    put(tmp_path / "home" / ".codex" / "AGENTS.md", "u" * 500)
    put(cwd / "AGENTS.md", "ROOT")

    async def body() -> None:
        async with WorkerRig(tmp_path, [say("ok")],
                             context=ContextSettings(max_bytes=200)) as rig:
            events = await rig.turn("go")
            prompt = system(rig.llm.requests[0])
        warnings = [e for e in events if isinstance(e, Error)]
        assert [w.code for w in warnings] == ["native.context.budget_evicted"]
        assert "~/.codex/AGENTS.md" in warnings[0].message
        assert "ROOT" in prompt and "uuuu" not in prompt

    run(body)


def test_instruction_discovery_can_be_turned_off(tmp_path: Path) -> None:
    cwd = repo(tmp_path)
    put(cwd / "AGENTS.md", "---\nallowed-tools: Read\n---\nROOT RULES")

    async def body() -> None:
        async with WorkerRig(tmp_path, [say("ok")],
                             context=ContextSettings(instructions=False)) as rig:
            await rig.turn("go")
            request = rig.llm.requests[0]
        assert "ROOT RULES" not in system(request)
        assert declared(request) == ["read", "write", "edit", "bash", "grep", "find", "ls"]

    run(body)


def test_the_active_tool_set_limits_what_the_model_sees_and_may_call(tmp_path: Path) -> None:
    (tmp_path / "cwd").mkdir()
    script = [call("bash", command="touch made-it"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, tools=["read", "ls"]) as rig:
            events = await rig.turn("go")
            request = rig.llm.requests[0]
        init = next(e for e in rig.events if isinstance(e, Init))
        assert init.tools == ["read", "ls"] and declared(request) == ["read", "ls"]
        assert [(t.name, t.is_error) for t in tools(events, "completed")] == [("bash", True)]
        assert not (tmp_path / "cwd" / "made-it").exists()

    run(body)


def test_skill_tools_exist_only_with_skills_and_serve_bodies_and_resources(tmp_path: Path) -> None:
    skills = tmp_path / "home" / ".claude" / "skills" / "review"
    put(skills / "SKILL.md", "---\nname: review\ndescription: Review a change\n---\nBe thorough.")
    put(skills / "ref" / "checklist.md", "1. tests")
    script = [call("list_skills"), call("load_skill", name="review"),
              call("load_skill_resource", name="review", path="ref/checklist.md"),
              call("load_skill_resource", name="review", path="../../CLAUDE.md"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script) as rig:
            events = await rig.turn("go")
            request = rig.llm.requests[0]
        init = next(e for e in rig.events if isinstance(e, Init))
        assert init.tools[-3:] == ["list_skills", "load_skill", "load_skill_resource"]
        assert declared(request)[-3:] == init.tools[-3:]
        done = tools(events, "completed")
        assert [(t.name, t.kind, t.is_error) for t in done] == [
            ("list_skills", "read", False), ("load_skill", "read", False),
            ("load_skill_resource", "read", False), ("load_skill_resource", "read", True)]
        assert "claude:user:review" in done[0].output and "Review a change" in done[0].output
        assert "Be thorough." in done[1].output and "ref/checklist.md" in done[1].output
        assert done[2].output == "1. tests"
        assert "skills.resource_outside" in done[3].output

    run(body)


def test_no_skills_no_skill_tools(tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [say("ok")]) as rig:
            await rig.turn("go")
        init = next(e for e in rig.events if isinstance(e, Init))
        assert init.tools == ["read", "write", "edit", "bash", "grep", "find", "ls"]

    run(body)


def hook(event: str, matcher: str, command: str, timeout: float = 30.0) -> ContextSettings:
    return ContextSettings(hooks={event: [HookMatcher(  # type: ignore[dict-item]
        matcher=matcher, hooks=[HookCommand(command=command, timeout=timeout)])]})


def test_a_pre_tool_use_hook_sees_claude_fields_and_exit_2_blocks(tmp_path: Path) -> None:
    (tmp_path / "cwd").mkdir()
    seen = tmp_path / "seen.json"
    command = f"cat > {seen}; echo 'not in this repo' >&2; exit 2"
    script = [call("bash", command="touch made-it"), call("ls"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script,
                             context=hook("PreToolUse", "Bash", command)) as rig:
            events = await rig.turn("go")
            session = rig.worker.session_id
        done = tools(events, "completed")
        assert [(t.name, t.is_error) for t in done] == [("bash", True), ("ls", False)]
        assert "blocked this call: not in this repo" in done[0].output
        assert not (tmp_path / "cwd" / "made-it").exists()
        stdin = json.loads(seen.read_text())
        assert stdin == {"session_id": session, "transcript_path": "",
                         "cwd": str(tmp_path / "cwd"), "hook_event_name": "PreToolUse",
                         "tool_name": "Bash", "tool_input": {"command": "touch made-it"}}

    run(body)


def test_a_pre_tool_use_hook_may_rewrite_the_input(tmp_path: Path) -> None:
    (tmp_path / "cwd").mkdir()
    rewrite = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                                 "updatedInput": {"command": "echo rewritten"}}})
    script = [call("bash", command="echo original"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script,
                             context=hook("PreToolUse", "", f"echo '{rewrite}'")) as rig:
            events = await rig.turn("go")
        (done,) = tools(events, "completed")
        assert "rewritten" in done.output and "original" not in done.output

    run(body)


def test_a_hook_past_its_timeout_is_killed_and_the_call_goes_on(tmp_path: Path) -> None:
    (tmp_path / "cwd").mkdir()
    pid = tmp_path / "pid"
    script = [call("bash", command="echo ran"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, context=hook(
                "PreToolUse", "Bash", f"echo $$ > {pid}; exec sleep 60", timeout=0.5)) as rig:
            events = await rig.turn("go")
        (done,) = tools(events, "completed")
        assert "ran" in done.output and not done.is_error
        warnings = [e for e in events if isinstance(e, Error)]
        assert [w.code for w in warnings] == ["native.hooks.warning"]
        assert "timed out" in warnings[0].message
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid.read_text()), 0)

    run(body)


def test_a_post_tool_use_block_reaches_the_model_with_the_result(tmp_path: Path) -> None:
    (tmp_path / "cwd").mkdir()
    block = json.dumps({"decision": "block", "reason": "run the tests next"})
    script = [call("bash", command="echo ran"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script,
                             context=hook("PostToolUse", "Bash", f"echo '{block}'")) as rig:
            await rig.turn("go")
            seen = responses(rig.llm.requests[1])
        assert "ran" in seen[0]["output"] and "run the tests next" in seen[0]["output"]

    run(body)


def test_claude_project_hooks_run_only_when_asked(tmp_path: Path) -> None:
    cwd = repo(tmp_path)
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "echo 'project says no' >&2; exit 2"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    put(cwd / ".claude" / "settings.json", json.dumps(settings))

    async def turn(claude_hooks: bool) -> bool:
        script = [call("bash", command="echo ran"), say("done")]
        async with WorkerRig(tmp_path, script,
                             context=ContextSettings(claude_hooks=claude_hooks)) as rig:
            events = await rig.turn("go")
        return tools(events, "completed")[0].is_error

    assert run(lambda: turn(True)) is True
    assert run(lambda: turn(False)) is False


def test_a_user_prompt_submit_block_ends_the_turn_before_any_model_call(tmp_path: Path) -> None:
    (tmp_path / "cwd").mkdir()
    seen = tmp_path / "seen.json"
    command = f"cat > {seen}; echo 'no secrets in prompts' >&2; exit 2"

    async def body() -> None:
        async with WorkerRig(tmp_path, [say("never")],
                             context=hook("UserPromptSubmit", "", command)) as rig:
            events = await rig.turn("my password is hunter2")
            assert rig.llm.requests == []
        (error,) = [e for e in events if isinstance(e, Error)]
        assert error.code == "native.hooks.prompt_blocked"
        assert "no secrets in prompts" in error.message
        assert result(events).stop_reason == "blocked" and result(events).is_error
        assert json.loads(seen.read_text())["prompt"] == "my password is hunter2"

    run(body)


def test_a_stop_hook_keeps_the_turn_going_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "cwd").mkdir()
    log = tmp_path / "stops"
    # Blocks the first stop only: stop_hook_active is false then, true after.
    command = (f"cat >> {log}; echo >> {log}; "
               f"grep -q '\"stop_hook_active\": true' {log} || "
               "{ echo 'now run the tests' >&2; exit 2; }")

    async def body() -> None:
        async with WorkerRig(tmp_path, [say("first"), say("tests pass")],
                             context=hook("Stop", "", command)) as rig:
            events = await rig.turn("go")
            second = rig.llm.requests[1]
        assert len(rig.llm.requests) == 2
        assert "now run the tests" in texts(second)
        assert result(events).stop_reason == "end_turn"
        stops = [json.loads(line) for line in log.read_text().splitlines() if line]
        assert [s["stop_hook_active"] for s in stops] == [False, True]

    run(body)


def test_a_loaded_skill_narrows_the_tools_for_the_rest_of_its_turn(tmp_path: Path) -> None:
    put(tmp_path / "home" / ".claude" / "skills" / "careful" / "SKILL.md",
        "---\nname: careful\ndescription: Look only\nallowed-tools: Read, LS\n---\nLook only.")
    script = [call("load_skill", name="careful"), call("bash", command="echo one"), say("ok"),
              call("bash", command="echo two"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script) as rig:
            first = await rig.turn("first")
            second = await rig.turn("second")
            requests = rig.llm.requests
        assert "bash" in declared(requests[0]) and "bash" not in declared(requests[1])
        assert "load_skill_resource" in declared(requests[1])
        assert [(t.name, t.is_error) for t in tools(first, "completed")] == [
            ("load_skill", False), ("bash", True)]
        assert "not allowed here by the skill claude:user:careful" in \
            tools(first, "completed")[1].output
        assert [(t.name, t.is_error) for t in tools(second, "completed")] == [("bash", False)]
        assert "bash" in declared(requests[3])

    run(body)


def test_a_pre_tool_use_hook_runs_once_for_a_call_that_asked_first(tmp_path: Path) -> None:
    (tmp_path / "cwd").mkdir()
    log = tmp_path / "log"
    script = [call("bash", command="echo ran"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, mode="ask",
                             context=hook("PreToolUse", "Bash", f"cat >> {log}; echo >> {log}")) as rig:
            await rig.prompt("go")
            asked = await rig.permission()
            await rig.decide(asked.permission_id, "allow")
            events = await rig.until(lambda e: type(e).__name__ == "Result")
        (done,) = tools(events, "completed")
        assert "ran" in done.output
        assert len([line for line in log.read_text().splitlines() if line]) == 1

    run(body)


def test_a_rewrite_holds_for_a_call_that_asked_first(tmp_path: Path) -> None:
    (tmp_path / "cwd").mkdir()
    rewrite = json.dumps({"hookSpecificOutput": {"updatedInput": {"command": "echo rewritten"}}})
    script = [call("bash", command="echo original"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, mode="ask",
                             context=hook("PreToolUse", "Bash", f"echo '{rewrite}'")) as rig:
            await rig.prompt("go")
            asked = await rig.permission()
            await rig.decide(asked.permission_id, "allow")
            events = await rig.until(lambda e: type(e).__name__ == "Result")
        (done,) = tools(events, "completed")
        assert "rewritten" in done.output and "original" not in done.output

    run(body)
