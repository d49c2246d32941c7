"""The native worker's tool contracts through ADK: tool events and permissions (in process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.native.worker.agent import NOT_RUN, REFUSED
from protocol.events import Permission, Result, Tool
from tests.fakes.model_script import Call, Turn, call, say

from .workerkit import WorkerRig, is_, responses, result, run, texts, tools


def test_each_tool_kind_is_started_then_completed_with_input_and_output(tmp_path: Path) -> None:
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "notes.txt").write_text("alpha\nbeta\n")
    script = [
        call("read", path="notes.txt"),
        call("write", path="new.txt", content="hello\n"),
        call("bash", command="echo out; exit 3"),
        Turn(calls=[Call(name="grep", args={"pattern": "beta"}),
                    Call(name="ls", args={}), Call(name="find", args={"pattern": "*.txt"})]),
        say("done"),
    ]

    async def body() -> None:
        async with WorkerRig(tmp_path, script) as rig:
            events = await rig.turn("go")
        started = {t.name: t for t in tools(events, "started")}
        completed = {t.name: t for t in tools(events, "completed")}
        assert {n: t.kind for n, t in started.items()} == {
            "read": "read", "write": "edit", "bash": "exec", "grep": "search", "ls": "search",
            "find": "search"}
        assert started["write"].input == {"path": "new.txt", "content": "hello\n"}
        assert completed["write"].input == {"path": "new.txt", "content": "hello\n"}
        assert "beta" in completed["read"].output and not completed["read"].is_error
        assert completed["bash"].is_error and "out" in completed["bash"].output  # exit 3
        assert "notes.txt:2:beta" in completed["grep"].output
        assert "new.txt" in completed["find"].output
        for name, tool in started.items():
            # started comes before completed, with the same call id
            assert events.index(tool) < events.index(completed[name])
            assert tool.call_id == completed[name].call_id
        assert (rig.cwd / "new.txt").read_text() == "hello\n"
        assert result(events).stop_reason == "end_turn"

    run(body)


def test_a_failing_tool_completes_with_is_error_and_the_turn_goes_on(tmp_path: Path) -> None:
    script = [call("read", path="../outside.txt"), call("no_such_tool", x=1), say("ok")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script) as rig:
            events = await rig.turn("go")
        done = tools(events, "completed")
        assert [(t.name, t.is_error) for t in done] == [("read", True), ("no_such_tool", True)]
        assert "outside the workspace" in done[0].output
        assert result(events).is_error is False and len(rig.llm.requests) == 3

    run(body)


@pytest.mark.parametrize(("mode", "asking"), [
    ("ask", {"write", "edit", "bash"}),
    ("inherit", {"write", "edit", "bash"}),
    ("auto_edit", {"bash"}),
    ("auto", set()),
])
def test_which_tools_ask_in_each_mode(tmp_path: Path, mode: str, asking: set[str]) -> None:
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "f.txt").write_text("x\n")
    calls = [Call(name="read", args={"path": "f.txt"}), Call(name="ls", args={}),
             Call(name="grep", args={"pattern": "x"}), Call(name="find", args={"pattern": "*"}),
             Call(name="bash", args={"command": "true"})]
    script = [Turn(calls=calls), call("edit", path="f.txt", old_string="x", new_string="y"),
              call("write", path="g.txt", content="z"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, mode=mode) as rig:
            await rig.prompt("go")
            asked: set[str] = set()
            while True:
                event = (await rig.until(lambda e: isinstance(e, (Permission, Result))))[-1]
                if isinstance(event, Result):
                    break
                assert isinstance(event, Permission)
                asked.add(event.tool)
                await rig.decide(event.permission_id, "allow")
        assert asked == asking
        assert (rig.cwd / "f.txt").read_text() == "y\n"
        assert (rig.cwd / "g.txt").read_text() == "z"

    run(body)


def test_allow_tools_patterns_allow_by_name(tmp_path: Path) -> None:
    script = [call("bash", command="echo hi > a"), call("write", path="b", content="b"),
              say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, mode="ask", allow_tools=["ba*"]) as rig:
            await rig.prompt("go")
            permission = await rig.permission()
            assert permission.tool == "write"
            await rig.decide(permission.permission_id, "allow")
            events = await rig.until(is_(Result))
        assert result(events).stop_reason == "end_turn"
        assert (rig.cwd / "a").read_text() == "hi\n"

    run(body)


def test_permission_carries_the_tool_kind_and_arguments_and_allow_runs_it(tmp_path: Path) -> None:
    script = [call("write", path="a.txt", content="hi"), say("written")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, mode="ask") as rig:
            await rig.prompt("write")
            permission = await rig.permission()
            assert (permission.tool, permission.kind) == ("write", "edit")
            assert permission.input == {"path": "a.txt", "content": "hi"}
            assert not (rig.cwd / "a.txt").exists()  # nothing runs before the answer
            await rig.decide(permission.permission_id, "allow")
            events = await rig.until(is_(Result))
        assert [t.is_error for t in tools(events, "completed")] == [False]
        assert (rig.cwd / "a.txt").read_text() == "hi"
        # the model saw the real result, not the placeholder of the pause
        assert responses(rig.llm.requests[1]) == [{"output": tools(events, "completed")[0].output}]

    run(body)


def test_deny_gives_the_model_a_refusal_and_the_turn_goes_on(tmp_path: Path) -> None:
    script = [call("bash", command="touch nope"), say("understood")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, mode="ask") as rig:
            await rig.prompt("run")
            permission = await rig.permission()
            await rig.decide(permission.permission_id, "deny")
            events = await rig.until(is_(Result))
        done = tools(events, "completed")
        assert [(t.name, t.is_error, t.output) for t in done] == [("bash", True, REFUSED)]
        assert responses(rig.llm.requests[1]) == [{"error": REFUSED}]
        assert result(events).stop_reason == "end_turn" and not result(events).is_error
        assert not (rig.cwd / "nope").exists()

    run(body)


def test_allow_always_stops_asking_for_that_tool(tmp_path: Path) -> None:
    script = [call("bash", command="echo 1"), call("bash", command="echo 2"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, mode="ask") as rig:
            await rig.prompt("run")
            permission = await rig.permission()
            await rig.decide(permission.permission_id, "allow_always")
            events = await rig.until(is_(Result))
        assert not any(isinstance(e, Permission) for e in events)
        assert [t.is_error for t in tools(events, "completed")] == [False, False]

    run(body)


def test_parallel_calls_wait_for_each_decision_and_settled_ones_complete_at_once(
        tmp_path: Path) -> None:
    script = [Turn(calls=[Call(name="bash", args={"command": "echo a"}),
                          Call(name="write", args={"path": "w", "content": "w"}),
                          Call(name="ls", args={})]), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, mode="ask") as rig:
            await rig.prompt("go")
            first = await rig.permission()
            second = await rig.permission()
            assert {first.tool, second.tool} == {"bash", "write"}
            await rig.decide(first.permission_id, "allow")
            await rig.until(is_(Tool, phase="completed", name=first.tool))
            assert len(rig.llm.requests) == 1  # still paused on the second
            await rig.decide(second.permission_id, "deny")
            events = await rig.until(is_(Result))
        assert len(rig.llm.requests) == 2
        got = sorted(str(r) for r in responses(rig.llm.requests[1]))
        assert any(REFUSED in r for r in got) and len(got) == 3
        assert result(events).stop_reason == "end_turn"

    run(body)


def test_interrupt_while_asking_ends_the_turn_and_the_call_stays_unrun(tmp_path: Path) -> None:
    script = [call("bash", command="touch ran"), say("next turn")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, mode="ask") as rig:
            await rig.prompt("run")
            await rig.permission()
            await rig.interrupt()
            events = await rig.until(is_(Result))
            assert (result(events).stop_reason, result(events).is_error) == ("interrupted", False)
            assert [(t.name, t.is_error) for t in tools(events, "completed")] == [("bash", True)]
            await rig.turn("and now?")
        assert not (rig.cwd / "ran").exists()
        # ADK seals the aborted call; the next request carries no call without its result
        calls = [p.function_call for c in rig.llm.requests[1].contents for p in c.parts or []
                 if p.function_call is not None]
        assert len(calls) == len(responses(rig.llm.requests[1]))
        assert texts(rig.llm.requests[1]) == ["run", "and now?"]

    run(body)


def test_interrupt_while_paused_leaves_the_model_a_not_run_result(tmp_path: Path) -> None:
    script = [call("bash", command="touch ran"), say("next turn")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, mode="ask") as rig:
            await rig.prompt("run")
            await rig.permission()
            await rig.wait_for(lambda: rig.worker.turn is not None and rig.worker.turn.paused)
            await rig.interrupt()
            events = await rig.until(is_(Result))
            assert (result(events).stop_reason, result(events).is_error) == ("interrupted", False)
            assert [(t.name, t.is_error, t.output) for t in tools(events, "completed")] == [
                ("bash", True, NOT_RUN)]
            await rig.turn("and now?")
        assert not (rig.cwd / "ran").exists()
        assert responses(rig.llm.requests[1]) == [{"error": NOT_RUN}]

    run(body)
