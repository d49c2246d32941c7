"""Autonomous runs in an in-process worker with the scripted model: each budget stops the run at
exactly its limit, ``report_done`` completes it, a checkpoint follows every turn, and a worker
that dies mid-run is resumed from the last checkpoint by the next one with budgets carried."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from actors.native.worker.autonomy import REPORT_DONE, progress_path
from protocol.events import Checkpoint, Event, Result, User
from protocol.native import Autonomy, Price
from tests.fakes.model_script import call, fail, hang, say

from .test_oneshot import declared
from .workerkit import WorkerRig, is_, result, run, texts


def autonomous(tmp: Path, steps: list[Any], *, session_id: str | None = None,
               **budgets: Any) -> WorkerRig:
    rig = WorkerRig(tmp, steps, session_id=session_id,
                    prices={"gpt-4.1-mini": Price(input=1000.0, output=1000.0)})
    rig._start = msgspec.structs.replace(rig._start, autonomous=Autonomy(goal="tidy up",
                                                                         **budgets))
    return rig


def checkpoints(events: list[Event]) -> list[Checkpoint]:
    return [e for e in events if isinstance(e, Checkpoint)]


def go(tmp: Path, steps: list[Any], **budgets: Any) -> tuple[list[Event], WorkerRig]:
    async def body() -> tuple[list[Event], WorkerRig]:
        async with autonomous(tmp, steps, **budgets) as rig:
            return await rig.turn("tidy up"), rig
    return run(body)


def test_max_turns_runs_exactly_that_many_turns(tmp_path: Path) -> None:
    events, rig = go(tmp_path, [say("one"), say("two"), say("three"), say("four")], max_turns=3)
    final = result(events)
    assert final.stop_reason == "max_turns_exceeded" and not final.is_error
    assert len(rig.llm.requests) == 3
    marks = checkpoints(events)
    assert [c.turn for c in marks] == [1, 2, 3]
    assert [c.stop_reason for c in marks] == [None, None, "max_turns_exceeded"]
    assert final.usage.input_tokens == 60 and final.usage.output_tokens == 15
    # the goal is the first user message, each continuation the next one
    assert texts(rig.llm.requests[0])[0] == "tidy up"
    continued = [e.text for e in events if isinstance(e, User)]
    assert len(continued) == 2 and all("tidy up" in t for t in continued)
    assert continued[0] in texts(rig.llm.requests[1])
    assert sum(isinstance(e, Result) for e in events) == 1


def test_report_done_completes_the_run(tmp_path: Path) -> None:
    events, rig = go(tmp_path, [say("working"), call(REPORT_DONE, summary="tidy"), say("bye")],
                     max_turns=5)
    final = result(events)
    assert final.stop_reason == "completed"
    assert len(rig.llm.requests) == 3 and checkpoints(events)[-1].done
    assert REPORT_DONE in declared(rig.llm.requests[0])


def test_token_budgets_stop_once_reached(tmp_path: Path) -> None:
    steps = [say(str(n)) for n in range(6)]  # 20 input and 5 output tokens a turn
    for limit, turns in ((60, 3), (59, 3), (61, 4)):
        (tmp_path / str(limit)).mkdir()
        events, rig = go(tmp_path / str(limit), list(steps), max_input_tokens=limit)
        assert result(events).stop_reason == "max_tokens_exceeded"
        assert len(rig.llm.requests) == turns, limit
    (tmp_path / "out").mkdir()
    events, rig = go(tmp_path / "out", list(steps), max_output_tokens=10)
    assert result(events).stop_reason == "max_tokens_exceeded" and len(rig.llm.requests) == 2


def test_cost_budget(tmp_path: Path) -> None:
    # 20 input + 5 output tokens at $1000 per million: $0.025 a turn
    events, rig = go(tmp_path, [say(str(n)) for n in range(6)], max_cost_usd=0.075)
    final = result(events)
    assert final.stop_reason == "max_cost_exceeded" and len(rig.llm.requests) == 3
    assert final.cost_usd == 0.075


def test_turn_errors_abort_skip_or_retry(tmp_path: Path) -> None:
    for policy, stop, calls in (("abort", "turn_error", 1), ("skip", "max_turns_exceeded", 3),
                                ("retry", "max_turns_exceeded", 3)):
        (tmp_path / policy).mkdir()
        events, rig = go(tmp_path / policy, [fail(400), say("b"), say("c")], max_turns=3,
                         on_turn_error=policy)
        final = result(events)
        assert (final.stop_reason, final.is_error) == (stop, policy == "abort"), policy
        assert len(rig.llm.requests) == calls
    retried = texts(rig.llm.requests[1])
    assert retried.count("tidy up") >= 2  # the same message was sent again


def test_interrupt_stops_the_run(tmp_path: Path) -> None:
    async def body() -> list[Event]:
        async with autonomous(tmp_path, [say("one"), hang()], max_turns=5) as rig:
            await rig.prompt("tidy up")
            await rig.until(is_(Checkpoint, turn=1))
            await rig.wait_for(lambda: len(rig.llm.requests) == 2)
            await rig.interrupt()
            return await rig.until(is_(Result))
    final = result(run(body))
    assert final.stop_reason == "interrupted"


def test_a_new_worker_resumes_from_the_last_checkpoint(tmp_path: Path) -> None:
    async def first() -> str:
        rig = autonomous(tmp_path, [say("one"), say("two")], max_turns=4)
        await rig.__aenter__()
        await rig.prompt("tidy up")
        marks = await rig.until(is_(Checkpoint, turn=2))
        # the worker dies here: its task is dropped, nothing is shut down or written
        assert rig.worker.turn is not None
        task = rig.worker._task
        assert task is not None
        task.cancel()
        assert checkpoints(marks)[-1].usage.input_tokens == 40
        return rig.worker.session_id

    session_id = run(first)
    store = tmp_path / "store"
    saved = json.loads(progress_path(str(store), session_id).read_bytes())
    assert saved["turns"] == 2 and saved["stop_reason"] is None

    async def second() -> tuple[list[Event], WorkerRig]:
        async with autonomous(tmp_path, [say("three"), say("four"), say("five")],
                              session_id=session_id, max_turns=4) as rig:
            return await rig.until(is_(Result)), rig
    events, rig = run(second)
    marks = checkpoints(events)
    assert marks[0].resumed and marks[0].turn == 2 and marks[0].usage.input_tokens == 40
    assert [c.turn for c in marks[1:]] == [3, 4]
    final = result(events)
    assert final.stop_reason == "max_turns_exceeded" and final.usage.input_tokens == 80
    assert len(rig.llm.requests) == 2
    # the resumed model call carries the earlier turns
    assert "one" in " ".join(texts(rig.llm.requests[0]))


def test_a_turn_past_its_timeout_is_interrupted_and_counts_as_a_turn_error(
        tmp_path: Path) -> None:
    # Real (short) time: the timeout is asyncio's, and the hanging model call never ends by
    # itself, so a missing timeout fails the test by its overall bound, not by luck.
    (tmp_path / "skip").mkdir()
    events, rig = go(tmp_path / "skip", [hang(), say("two")], max_turns=2,
                     per_turn_timeout_s=0.2, on_turn_error="skip")
    assert result(events).stop_reason == "max_turns_exceeded" and len(rig.llm.requests) == 2
    assert rig.llm.cancelled == 1
    (tmp_path / "abort").mkdir()
    events, _ = go(tmp_path / "abort", [hang()], per_turn_timeout_s=0.2)
    assert (result(events).stop_reason, result(events).is_error) == ("turn_error", True)
    (tmp_path / "wall").mkdir()
    events, _ = go(tmp_path / "wall", [say("one"), hang()], max_wallclock_s=0.5,
                   on_turn_error="skip")
    assert result(events).stop_reason == "wallclock_exceeded"
    assert [c.turn for c in checkpoints(events)] == [1, 2]


def test_a_steer_reaches_the_running_inner_turn(tmp_path: Path) -> None:
    async def body() -> tuple[list[Event], WorkerRig]:
        async with autonomous(tmp_path, [hang("working"), say("with pears")], max_turns=2) as rig:
            await rig.prompt("tidy up")
            await rig.wait_for(lambda: len(rig.llm.requests) == 1)
            await rig.steer("mention pears")
            rig.llm.release()
            return await rig.until(is_(Result)), rig
    events, rig = run(body)
    assert result(events).stop_reason == "max_turns_exceeded"
    assert "mention pears" in texts(rig.llm.requests[1])
    assert [c.turn for c in checkpoints(events)] == [1, 2]
