"""Compaction in the worker, with the scripted model: what the model is sent, the ``compaction``
events, the sidecar after a restart, summaries and their fallback, ``compact`` on demand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from actors.native.compaction.plan import ELIDED, SUMMARY_PREFIX
from protocol.events import Compaction, Error, Event
from protocol.native import Compact
from protocol.native_context import ContextSettings, HookCommand, HookMatcher
from tests.actors.native.workerkit import WorkerRig, is_, run, texts
from tests.fakes.model_script import Step, call, fail, say

# context_tokens this small triggers on every request and can never reach the target: all
# that is eligible goes (the assertions do not depend on the size of the system prompt).
TIGHT = {"context_tokens": 100, "keep_recent_turns": 1}


def turn_steps(n: int, start: int = 0) -> list[Step]:
    steps: list[Step] = []
    for i in range(start, start + n):
        steps += [call("read", path="big.txt"), say(f"done {i}")]
    return steps


def pairs(request: Any) -> tuple[list[str], list[str]]:
    calls = [p.function_call.id for c in request.contents for p in c.parts or []
             if p.function_call is not None]
    answers = [p.function_response.id for c in request.contents for p in c.parts or []
               if p.function_response is not None]
    return calls, answers


def bodies(request: Any) -> list[Any]:
    return [p.function_response.response for c in request.contents for p in c.parts or []
            if p.function_response is not None]


def compactions(events: list[Event]) -> list[Compaction]:
    return [e for e in events if isinstance(e, Compaction)]


def test_old_turns_are_compacted_and_the_recent_window_and_pairs_are_kept(tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, turn_steps(4), compaction=TIGHT) as rig:
            (rig.cwd / "big.txt").write_text("y\n" * 2000)
            for i in range(4):
                await rig.turn(f"task {i}")
            last = rig.llm.requests[-1]
            # content 0 (the task) stays; turn 1 went; turn 2 (the recent window) and turn 3
            # (the active one) are exactly what they were.
            assert texts(last) == ["task 0", "task 2", "done 2", "task 3"]
            calls, answers = pairs(last)
            assert calls == answers and len(calls) == 2
            assert all(b != {"output": ELIDED} for b in bodies(last))
            uncompacted = rig.llm.requests[5]  # turn 2's last call: nothing eligible yet
            assert bodies(last)[0] == bodies(uncompacted)[-1]
            events = compactions(rig.events)
            assert events and all(e.reason == "auto" and e.exhausted for e in events)
            assert not events[0].elided  # nothing eligible yet: exhaustion, reported once
            assert all(e.elided or e.dropped_turns for e in events[1:])
            first = events[1]
            assert first.tokens_after < first.tokens_before and first.context_tokens == 100
            assert first.elided and first.elided[0].startswith("call_")
            assert sum(e.dropped_turns for e in events) == 2  # turn 0's tail, then turn 1

    run(body)


def test_protected_tools_are_not_compacted(tmp_path: Path) -> None:
    async def body() -> None:
        config = {**TIGHT, "protected_tools": ["read"]}
        async with WorkerRig(tmp_path, turn_steps(3), compaction=config) as rig:
            (rig.cwd / "big.txt").write_text("y\n" * 2000)
            for i in range(3):
                await rig.turn(f"task {i}")
            last = rig.llm.requests[-1]
            assert texts(last) == ["task 0", "done 0", "task 1", "done 1", "task 2"]
            assert all(b != {"output": ELIDED} for b in bodies(last))

    run(body)


def test_the_sidecar_is_reapplied_after_a_restart(tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, turn_steps(3), compaction=TIGHT) as rig:
            (rig.cwd / "big.txt").write_text("y\n" * 2000)
            for i in range(3):
                await rig.turn(f"task {i}")
            session_id = rig.worker.session_id
        sidecar = tmp_path / "store" / f"{session_id}.compaction.json"
        saved = json.loads(sidecar.read_bytes())
        assert saved["version"] == 1
        assert {d["type"] for d in saved["decisions"]} == {"elide", "drop"}
        # A new worker on the same store, compaction now off: the decisions still apply.
        async with WorkerRig(tmp_path, turn_steps(1, 3), session_id=session_id) as again:
            await again.turn("task 3")
            first = again.llm.requests[0]
            # rig 1 dropped turn 0's tail (turn 1 was its recent window); that holds.
            assert texts(first) == ["task 0", "task 1", "done 1", "task 2", "done 2", "task 3"]
            assert {"output": ELIDED} not in bodies(first)
            assert not compactions(again.events)
        # Without the sidecar the full history comes back: it was the sidecar.
        sidecar.unlink()
        async with WorkerRig(tmp_path, [say("done 4")], session_id=session_id) as bare:
            await bare.turn("task 4")
            assert texts(bare.llm.requests[0])[:3] == ["task 0", "done 0", "task 1"]

    run(body)


def test_summarize_substitutes_a_summary_for_the_dropped_turns(tmp_path: Path) -> None:
    async def body() -> None:
        config = {**TIGHT, "mode": "summarize"}
        steps = [*turn_steps(2), say("SUMMARY: read big.txt twice"), *turn_steps(1, 2)]
        async with WorkerRig(tmp_path, steps, compaction=config) as rig:
            (rig.cwd / "big.txt").write_text("y\n" * 2000)
            for i in range(3):
                await rig.turn(f"task {i}")
            summary_request = rig.llm.requests[4]
            assert "Summarise this conversation" in texts(summary_request)[0]
            assert "done 0" in texts(summary_request)[0]
            # The summary is summarised once, not again at each later request.
            assert sum(1 for r in rig.llm.requests if "Summarise" in texts(r)[0]) == 1
            last = rig.llm.requests[-1]
            assert texts(last)[:2] == ["task 0", SUMMARY_PREFIX + "SUMMARY: read big.txt twice"]
            event = [e for e in compactions(rig.events) if e.dropped_turns][0]
            assert event.summarized and event.mode == "summarize" and event.warning is None
            session_id = rig.worker.session_id
        saved = json.loads((tmp_path / "store" / f"{session_id}.compaction.json").read_bytes())
        assert saved["decisions"][-1]["type"] == "summary"
        async with WorkerRig(tmp_path, [say("ok")], session_id=session_id) as again:
            await again.turn("task 3")
            assert SUMMARY_PREFIX + "SUMMARY: read big.txt twice" in texts(again.llm.requests[0])

    run(body)


def test_a_summary_that_keeps_failing_falls_back_to_dropping(tmp_path: Path) -> None:
    async def body() -> None:
        config = {**TIGHT, "mode": "summarize", "summary_retries": 1}
        steps = [*turn_steps(2), fail(500), say(""), *turn_steps(1, 2)]
        async with WorkerRig(tmp_path, steps, compaction=config) as rig:
            (rig.cwd / "big.txt").write_text("y\n" * 2000)
            for i in range(3):
                await rig.turn(f"task {i}")
            event = [e for e in compactions(rig.events) if e.dropped_turns][0]
            assert not event.summarized and event.dropped_turns == 1
            assert event.warning is not None and "2 attempt(s)" in event.warning
            last = rig.llm.requests[-1]
            assert texts(last) == ["task 0", "task 1", "done 1", "task 2"]  # no summary

    run(body)


def test_compact_on_demand_compacts_the_idle_history(tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [*turn_steps(3), say("ok")],
                             compaction={"keep_recent_turns": 1}) as rig:
            (rig.cwd / "big.txt").write_text("y\n" * 2000)
            for i in range(3):
                await rig.turn(f"task {i}")
            assert not compactions(rig.events)  # context_tokens 0: no automatic compaction
            await rig.send(Compact())
            event = compactions(await rig.until(is_(Compaction)))[0]
            assert event.reason == "manual" and event.dropped_turns == 2
            assert event.tokens_after < event.tokens_before
            await rig.turn("task 3")
            assert texts(rig.llm.requests[-1]) == ["task 0", "task 2", "done 2", "task 3"]

    run(body)


def test_compact_during_a_turn_is_refused(tmp_path: Path) -> None:
    async def body() -> None:
        from tests.fakes.model_script import hang
        async with WorkerRig(tmp_path, [hang()]) as rig:
            await rig.prompt("go")
            await rig.wait_for(lambda: len(rig.llm.requests) == 1)
            await rig.send(Compact())
            error = (await rig.until(is_(Error, code="session_busy")))[-1]
            assert isinstance(error, Error)
            await rig.interrupt()

    run(body)


def test_an_unreadable_sidecar_is_an_error_event_and_the_session_goes_on(tmp_path: Path) -> None:
    async def body() -> None:
        async with WorkerRig(tmp_path, [say("one")], compaction=TIGHT) as rig:
            await rig.turn("task 0")
            session_id = rig.worker.session_id
        sidecar = tmp_path / "store" / f"{session_id}.compaction.json"
        sidecar.write_bytes(b"{not json")
        async with WorkerRig(tmp_path, [say("two")], session_id=session_id,
                             compaction=TIGHT) as again:
            (error,) = [e for e in again.events if isinstance(e, Error)]
            assert error.code == "native.compaction.sidecar" and str(sidecar) in error.message
            events = await again.turn("task 1")
            assert texts(again.llm.requests[0]) == ["task 0", "one", "task 1"]
            assert [e for e in events if isinstance(e, Error)] == [error]  # the start's only

    run(body)


def _pre_compact(matcher: str, command: str) -> ContextSettings:
    return ContextSettings(hooks={"PreCompact": [HookMatcher(
        matcher=matcher, hooks=[HookCommand(command=command, timeout=30.0)])]})


def test_pre_compact_hooks_run_before_a_compaction_with_its_trigger(tmp_path: Path) -> None:
    seen = tmp_path / "seen.jsonl"
    # one hook for manual compactions only, one (failing) for every compaction
    context = ContextSettings(hooks={"PreCompact": [
        HookMatcher(matcher="manual", hooks=[HookCommand(command=f"cat >> {seen}; echo >> {seen}")]),
        HookMatcher(matcher="", hooks=[HookCommand(command="echo broken >&2; exit 1")]),
    ]})

    async def body() -> None:
        async with WorkerRig(tmp_path, [*turn_steps(3), say("ok")], context=context,
                             compaction={"keep_recent_turns": 1}) as rig:
            (rig.cwd / "big.txt").write_text("y\n" * 2000)
            for i in range(3):
                await rig.turn(f"task {i}")
            assert not seen.exists()  # no compaction yet: no hook
            await rig.send(Compact())
            await rig.until(is_(Compaction))
            session = rig.worker.session_id
            warnings = [e for e in rig.events if isinstance(e, Error)
                        and e.code == "native.hooks.warning"]
        [stdin] = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
        assert stdin == {"session_id": session, "transcript_path": "", "cwd": str(rig.cwd),
                         "hook_event_name": "PreCompact", "trigger": "manual",
                         "custom_instructions": ""}
        assert len(warnings) == 1 and "broken" in warnings[0].message

    run(body)


def test_an_auto_pre_compact_hook_runs_only_when_a_compaction_happens(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"

    async def body() -> None:
        async with WorkerRig(tmp_path, [*turn_steps(3), say("ok")],
                             context=_pre_compact("auto", f"echo x >> {seen}"),
                             compaction=TIGHT) as rig:
            (rig.cwd / "big.txt").write_text("y\n" * 2000)
            await rig.turn("task 0")
            assert not seen.exists()  # one turn: nothing eligible, nothing compacted
            for i in range(1, 3):
                await rig.turn(f"task {i}")
            auto = [e for e in compactions(rig.events) if e.reason == "auto"
                    and (e.elided or e.dropped_turns)]
        assert auto and seen.read_text().count("x") == len(auto)

    run(body)
