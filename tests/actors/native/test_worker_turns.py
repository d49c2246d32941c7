"""The native worker's loop contracts (in process, scripted models): streaming, steering,
interrupts, usage and cost, one result per turn, set_model, model errors."""

from __future__ import annotations

import time
from pathlib import Path

import psutil

from protocol.events import Assistant, Error, Result, Thought, Tool
from protocol.native import Price
from tests.fakes.model_script import Call, Turn, call, fail, hang, say
from tests.fakes.scripted_llm import ScriptedLlm

from .workerkit import WorkerRig, is_, result, run, texts, tools


def test_text_and_thought_stream_as_deltas_and_each_turn_has_one_result(tmp_path: Path) -> None:
    script = [Turn(thought="let me think", text="hello world", chunk=5), say("two"), say("three")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script) as rig:
            first = await rig.turn("one")
            second = await rig.turn("two")
            third = await rig.turn("three")
        thoughts = [e for e in first if isinstance(e, Thought)]
        said = [e for e in first if isinstance(e, Assistant)]
        assert all(e.delta for e in thoughts + said)
        assert "".join(e.text for e in thoughts) == "let me think"
        assert "".join(e.text for e in said) == "hello world" and len(said) == 3
        for events in (first, second, third):
            assert sum(1 for e in events if isinstance(e, Result)) == 1
            assert result(events).stop_reason == "end_turn"
        # each turn's request carries the earlier turns
        assert texts(rig.llm.requests[2]) == ["one", "hello world", "two", "two", "three"]

    run(body)


def test_usage_is_summed_over_the_turns_model_calls_and_priced(tmp_path: Path) -> None:
    script = [call("ls"), say("b", input_tokens=200, output_tokens=20, cache_read_tokens=40,
                              cache_write_tokens=7)]
    price = Price(input=1.0, output=10.0, cache_read=0.1, cache_write=2.0)

    async def body() -> None:
        async with WorkerRig(tmp_path, script, prices={"gpt-4.1-mini": price}) as rig:
            events = await rig.turn("go")
        usage = result(events).usage
        # the tool call (20 in, 5 out: the script's defaults) plus the answer
        assert (usage.input_tokens, usage.output_tokens) == (220, 25)
        assert (usage.cache_read_tokens, usage.cache_write_tokens) == (40, 7)
        expected = (220 * 1.0 + 25 * 10.0 + 40 * 0.1 + 7 * 2.0) / 1_000_000
        assert result(events).cost_usd == round(expected, 8)
        assert result(events).duration_ms is not None

    run(body)


def test_a_model_without_a_price_has_null_cost(tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [say("x")], prices={"other": Price(input=1, output=1)}) as rig:
            events = await rig.turn("go")
        assert result(events).cost_usd is None
        assert result(events).usage.input_tokens == 20

    run(body)


def test_a_steer_is_injected_before_the_next_model_call(tmp_path: Path) -> None:
    # The first call streams, holds (the steer arrives), then asks for ls.
    script = [Turn(text="on it", calls=[Call(name="ls")], hang=True), say("done")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script) as rig:
            await rig.prompt("list files")
            await rig.until(is_(Assistant))
            await rig.steer("also say hi")
            rig.llm.release()
            events = await rig.until(is_(Result))
        assert len(rig.llm.requests) == 2
        # after the tool call and its result, before the model's next answer
        last = rig.llm.requests[1].contents[-1]
        assert (last.role, [p.text for p in last.parts or []]) == ("user", ["also say hi"])
        assert [e for e in events if isinstance(e, Result)] == [result(events)]

    run(body)


def test_a_steer_during_the_last_model_call_gets_one_more_call_in_the_same_turn(
        tmp_path: Path) -> None:
    script = [hang("almost done"), say("and hi")]

    async def body() -> None:
        async with WorkerRig(tmp_path, script) as rig:
            await rig.prompt("finish")
            events = await rig.until(is_(Assistant))
            await rig.steer("say hi too")
            rig.llm.release()
            events += await rig.until(is_(Result))
            later = await rig.turn("next")
        assert len(rig.llm.requests) == 3
        assert texts(rig.llm.requests[1])[-2:] == ["almost done", "say hi too"]
        said = "".join(e.text for e in events if isinstance(e, Assistant))
        assert said == "almost doneand hi"
        assert [e for e in events if isinstance(e, Result)] == [result(events)]
        assert result(later).stop_reason == "end_turn"

    run(body)


def test_interrupt_closes_a_slow_stream_at_once_and_ends_the_turn_interrupted(
        tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [hang("thinking about it"), say("after")]) as rig:
            await rig.prompt("slow")
            await rig.until(is_(Assistant))
            begun = time.monotonic()
            await rig.interrupt()
            events = await rig.until(is_(Result))
            took = time.monotonic() - begun
            after = await rig.turn("again")
        assert (result(events).stop_reason, result(events).is_error) == ("interrupted", False)
        assert rig.llm.cancelled == 1 and took < 1.0
        assert result(after).stop_reason == "end_turn"

    run(body)


def test_interrupt_kills_a_running_bash_and_its_process_group(tmp_path: Path) -> None:
    command = "sleep 300 & echo $! > child.pid; wait"

    async def body() -> None:
        async with WorkerRig(tmp_path, [call("bash", command=command), say("after")]) as rig:
            pid_file = rig.cwd / "child.pid"
            await rig.prompt("run it")
            await rig.wait_for(lambda: pid_file.exists() and pid_file.read_text().strip() != "")
            child = psutil.Process(int(pid_file.read_text()))
            await rig.interrupt()
            events = await rig.until(is_(Result))
            gone, alive = psutil.wait_procs([child], timeout=5)
        assert alive == [] or all(p.status() == psutil.STATUS_ZOMBIE for p in alive)
        assert result(events).stop_reason == "interrupted" and not result(events).is_error
        done = tools(events, "completed")
        assert [(t.name, t.is_error) for t in done] == [("bash", True)]
        assert len(rig.llm.requests) == 1  # nothing more was asked of the model

    run(body)


def test_set_model_switches_the_next_model_call_inside_a_turn(tmp_path: Path) -> None:
    other = ScriptedLlm([say("from the other model")])
    script = [Turn(text="first", calls=[Call(name="ls")], hang=True)]

    async def body() -> None:
        async with WorkerRig(tmp_path, script, models={"anthropic/claude-sonnet-4": other},
                             prices={"claude-sonnet-4": Price(input=3, output=15)}) as rig:
            await rig.prompt("go")
            await rig.until(is_(Assistant))
            await rig.set_model("anthropic/claude-sonnet-4")
            rig.llm.release()
            events = await rig.until(is_(Result))
        assert len(rig.llm.requests) == 1 and len(other.requests) == 1
        assert texts(other.requests[0])[:2] == ["go", "first"]
        assert "".join(e.text for e in events if isinstance(e, Assistant)).endswith(
            "from the other model")
        # the first call's model has no price: the turn's cost is unknown
        assert result(events).cost_usd is None

    run(body)


def test_a_model_error_is_an_error_event_and_an_error_result_and_the_worker_goes_on(
        tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [fail(429), say("fine now")]) as rig:
            events = await rig.turn("go")
            later = await rig.turn("again")
        errors = [e for e in events if isinstance(e, Error)]
        assert [(e.code, e.error_class) for e in errors] == [("native.limit.rate_limited", "limit")]
        assert (result(events).stop_reason, result(events).is_error) == ("error", True)
        assert result(later).stop_reason == "end_turn"
        assert "".join(e.text for e in later if isinstance(e, Assistant)) == "fine now"

    run(body)


def test_a_prompt_that_crosses_the_end_of_a_turn_runs_as_the_next_turn(tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [hang("one"), say("two")]) as rig:
            await rig.prompt("first")
            await rig.until(is_(Assistant))
            await rig.prompt("second")  # the daemon thought the turn had ended
            rig.llm.release()
            first = await rig.until(is_(Result))
            second = await rig.until(is_(Result))
        assert result(first).stop_reason == result(second).stop_reason == "end_turn"
        assert texts(rig.llm.requests[1])[-1] == "second"
        assert not any(isinstance(e, Tool) for e in first + second)

    run(body)


def test_thinking_asks_the_model_for_its_thoughts_and_instructions_reach_the_system_prompt(
        tmp_path: Path) -> None:
    import msgspec

    async def body() -> None:
        rig = WorkerRig(tmp_path, [say("ok")])
        rig._start = msgspec.structs.replace(rig._start, thinking=True,
                                             instructions="Answer in {braces} verbatim.")
        async with rig:
            await rig.turn("go")
        config = rig.llm.requests[0].config
        assert config.thinking_config is not None and config.thinking_config.include_thoughts
        system = str(config.system_instruction)
        assert "Answer in {braces} verbatim." in system and str(rig.cwd) in system

    run(body)


def test_a_steer_that_reaches_an_interrupted_turn_becomes_the_next_turn(tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [hang("slow"), say("handled")]) as rig:
            await rig.prompt("first")
            await rig.until(is_(Assistant))
            await rig.interrupt()
            await rig.steer("do this instead")  # before the interrupted result went out
            first = await rig.until(is_(Result))
            second = await rig.until(is_(Result))
        assert result(first).stop_reason == "interrupted"
        assert result(second).stop_reason == "end_turn"
        assert texts(rig.llm.requests[1])[-1] == "do this instead"

    run(body)
