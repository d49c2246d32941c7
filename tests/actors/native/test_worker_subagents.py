"""Subagents as tools of the native agent: nested runs, tagged events, the depth limit, agent files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec import UNSET

from protocol.events import Assistant, Error, Init, Result
from protocol.native_context import ContextSettings, SubagentDef
from tests.fakes.model_script import call, hang, say
from tests.fakes.scripted_llm import ScriptedLlm

from .workerkit import WorkerRig, responses, result, run, texts, tools


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def declared(request: Any) -> list[str]:
    return [d.name for t in (request.config.tools or []) for d in (t.function_declarations or [])]


def described(request: Any) -> dict[str, str]:
    return {d.name: d.description for t in (request.config.tools or [])
            for d in (t.function_declarations or [])}


def system(request: Any) -> str:
    return str(request.config.system_instruction or "")


REVIEWER = SubagentDef(description="Reviews code", instructions="You review code.",
                       tools=["Read", "ls"])


def test_a_subagent_call_runs_it_on_the_task_and_returns_its_final_text(tmp_path: Path) -> None:
    steps = [call("reviewer", task="review a.txt"),     # the session's model hands off
             call("read", path="a.txt"),                # the subagent reads
             say("a.txt looks fine"),                   # the subagent's answer
             say("the reviewer says it is fine")]       # the session's model answers
    context = ContextSettings(subagents={"reviewer": REVIEWER}, agent_files=False)

    async def body() -> None:
        async with WorkerRig(tmp_path, steps, context=context) as rig:
            (rig.cwd / "a.txt").write_text("hello\n")
            events = await rig.turn("please review")
            assert not result(events).is_error
            # four model calls of 20 in / 5 out each, two of them the subagent's
            assert result(events).usage.input_tokens == 80
            assert result(events).usage.output_tokens == 20
            init = next(e for e in rig.events if isinstance(e, Init))
            assert "reviewer" in init.tools
            parent, sub, sub_answer, last = rig.llm.requests
            assert "reviewer" in declared(parent)
            # its own context: its instructions, its tools, the task as the user message
            assert "You review code." in system(sub) and "You review code." not in system(parent)
            assert sorted(declared(sub)) == ["ls", "read"]
            assert texts(sub) == ["review a.txt"]
            assert "please review" not in texts(sub_answer)
            assert responses(last)[-1] == {"output": "a.txt looks fine"}
            # its events are in the stream, tagged; the parent's are not
            read = [t for t in tools(events) if t.name == "read"]
            assert [t.subagent for t in read] == ["reviewer", "reviewer"]
            handoff = [t for t in tools(events) if t.name == "reviewer"]
            assert [t.phase for t in handoff] == ["started", "completed"]
            assert all(t.subagent is UNSET for t in handoff)
            said = [e for e in events if isinstance(e, Assistant)]
            assert {e.subagent for e in said} == {"reviewer", UNSET}
            assert "".join(e.text for e in said if e.subagent == "reviewer") == "a.txt looks fine"

    run(body)


def test_the_third_level_of_subagents_is_refused(tmp_path: Path) -> None:
    # "loop" names no tools, so it has every tool, itself included: level 1 calls level 2,
    # which calls level 3, which is refused; each level then answers.
    steps = [call("loop", task="one"), call("loop", task="two"), call("loop", task="three"),
             say("level two done"), say("level one done"), say("all done")]
    context = ContextSettings(subagents={"loop": SubagentDef(instructions="Delegate.")},
                              agent_files=False)

    async def body() -> None:
        async with WorkerRig(tmp_path, steps, context=context) as rig:
            events = await rig.turn("go")
            assert not result(events).is_error
            requests = rig.llm.requests
            assert len(requests) == 6
            refused = responses(requests[3])[-1]
            assert "error" in refused and "level 3" in refused["error"]
            assert responses(requests[4])[-1] == {"output": "level two done"}
            assert responses(requests[5])[-1] == {"output": "level one done"}
            done = [t for t in tools(events, "completed") if t.name == "loop"]
            assert [(t.subagent, t.is_error) for t in done] == [
                ("loop", True), ("loop", False), (UNSET, False)]

    run(body)


def test_a_subagent_cannot_ask_so_a_call_that_would_ask_does_not_run(tmp_path: Path) -> None:
    steps = [call("writer", task="write b.txt"), call("write", path="b.txt", content="x"),
             say("could not write"), say("ok")]
    context = ContextSettings(subagents={"writer": SubagentDef(instructions="Write.")},
                              agent_files=False)

    async def body() -> None:
        async with WorkerRig(tmp_path, steps, mode="ask", context=context) as rig:
            events = await rig.turn("go")
            assert not (rig.cwd / "b.txt").exists()
            write = [t for t in tools(events, "completed") if t.name == "write"]
            assert write[0].is_error and write[0].subagent == "writer"
            assert "cannot ask" in str(write[0].output)

    run(body)


def test_claude_and_codex_agent_files_become_subagents(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    (cwd / ".git").mkdir(parents=True)
    put(cwd / ".claude" / "agents" / "tester.md",
        "---\nname: tester\ndescription: Runs tests\ntools: Read, Grep, Bash\n---\nRun tests.\n")
    put(tmp_path / "home" / ".codex" / "agents" / "planner.toml",
        'name = "planner"\ndescription = "Plans"\ninstructions = "Make a plan."\n')
    put(cwd / ".claude" / "agents" / "bad name.md", "---\nname: bad name\n---\nbody\n")
    steps = [call("tester", task="run them"), say("all pass"), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, steps) as rig:
            events = await rig.turn("go")
            init = next(e for e in rig.events if isinstance(e, Init))
            assert {"tester", "planner"} <= set(init.tools)
            parent, sub, _ = rig.llm.requests
            assert described(parent)["tester"] == "Runs tests"
            assert sorted(declared(sub)) == ["bash", "grep", "read"]
            assert "Run tests." in system(sub)
            warned = [e for e in rig.events if isinstance(e, Error)]
            assert any(e.code == "native.subagents.bad_name" for e in warned)
            assert [t.subagent for t in tools(events) if t.name == "tester"] == [UNSET, UNSET]

    run(body)


def test_a_subagent_of_the_sessions_provider_uses_its_own_model(tmp_path: Path) -> None:
    small = ScriptedLlm([say("from the small model")])
    context = ContextSettings(subagents={"quick": SubagentDef(
        instructions="Be quick.", model="openai/small")}, agent_files=False)

    async def body() -> None:
        async with WorkerRig(tmp_path, [call("quick", task="t"), say("done")], context=context,
                             models={"openai/small": small}) as rig:
            await rig.turn("go")
            assert texts(small.requests[0]) == ["t"]
            assert responses(rig.llm.requests[1])[-1] == {"output": "from the small model"}

    run(body)


def test_an_interrupt_stops_a_running_subagent(tmp_path: Path) -> None:
    context = ContextSettings(subagents={"slow": SubagentDef(instructions="Take time.")},
                              agent_files=False)

    async def body() -> None:
        async with WorkerRig(tmp_path, [call("slow", task="t"), hang()], context=context) as rig:
            await rig.prompt("go")
            await rig.until(lambda e: isinstance(e, Assistant) and e.subagent == "slow")
            await rig.interrupt()
            events = await rig.until(lambda e: isinstance(e, Result))
            assert result(events).stop_reason == "interrupted"
            assert rig.llm.cancelled == 1

    run(body)
