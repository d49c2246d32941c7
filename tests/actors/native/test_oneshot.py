"""``corral run``'s bounded one-shot run and ``corral probe`` against the scripted in-process model
(and the probe over each provider's wire, against the fake model server).

Each bound is checked at exactly its limit: the run that fits it succeeds, the one that needs
one more call stops with the bound's outcome code and without running what was cut.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.native.models import ProviderKind, build_model, close_model
from actors.native.cli.oneshot import PING, PING_MARKER, RunLimits, RunResult, probe, run_once
from tests.fakes.model_script import Call, Turn, call, fail, say
from tests.fakes.model_thread import ServerThread
from tests.fakes.scripted_llm import ScriptedLlm

from .modelkit import KINDS, config_for

from .workerkit import run


def once(tmp: Path, steps: list[Any], **kw: object) -> tuple[RunResult, ScriptedLlm]:
    llm = ScriptedLlm(steps)
    result = run(lambda: run_once(llm, "do it", cwd=str(tmp), **kw))  # type: ignore[arg-type]
    return result, llm


def declared(request: Any) -> list[str]:
    """The tool names a recorded model request advertised."""
    return [d.name for t in request.config.tools or [] for d in t.function_declarations]


def test_a_run_returns_the_final_text_and_counts_calls(tmp_path: Path) -> None:
    result, llm = once(tmp_path, [call("write", path="a.txt", content="hi"), say("wrote a.txt")])
    assert (result.outcome, result.text) == ("ok", "wrote a.txt")
    assert (tmp_path / "a.txt").read_text() == "hi"
    assert (result.usage.model_calls, result.usage.tool_calls) == (2, 1)
    assert result.usage.input_tokens == 40 and result.usage.output_tokens == 10
    assert len(llm.requests) == 2


def test_model_calls_stop_at_exactly_the_limit(tmp_path: Path) -> None:
    steps = [call("write", path="a.txt", content="1"), call("write", path="b.txt", content="2"),
             say("done")]
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    fits, _ = once(tmp_path / "x", steps,
                   limits=RunLimits(max_model_calls=3))
    assert fits.outcome == "ok" and fits.usage.model_calls == 3
    over, llm = once(tmp_path / "y", steps,
                     limits=RunLimits(max_model_calls=2))
    assert over.outcome == "max_model_calls", over
    assert len(llm.requests) == 2 and over.usage.model_calls == 2
    assert (tmp_path / "y" / "a.txt").exists()
    assert not (tmp_path / "y" / "b.txt").exists()  # the cut call never ran


def test_tool_calls_over_the_limit_are_rejected_before_any_runs(tmp_path: Path) -> None:
    two = Turn(calls=[Call(name="write", args={"path": "a.txt", "content": "1"}),
                      Call(name="write", args={"path": "b.txt", "content": "2"})])
    (tmp_path / "x").mkdir()
    fits, _ = once(tmp_path / "x", [two, say("done")], limits=RunLimits(max_tool_calls=2))
    assert fits.outcome == "ok" and fits.usage.tool_calls == 2
    (tmp_path / "y").mkdir()
    over, llm = once(tmp_path / "y", [two, say("done")], limits=RunLimits(max_tool_calls=1))
    assert over.outcome == "max_tool_calls" and over.usage.tool_calls == 0
    assert not (tmp_path / "y" / "a.txt").exists() and len(llm.requests) == 1


def test_exactly_the_tools_asked_for(tmp_path: Path) -> None:
    result, llm = once(tmp_path, [say("fine")], tools=["read", "grep"])
    assert result.ok
    assert sorted(declared(llm.requests[0])) == ["grep", "read"]
    none, llm = once(tmp_path, [say("fine")], tools=[])
    assert none.ok and not llm.requests[0].config.tools
    bad, _ = once(tmp_path, [say("x")], tools=["rm"])
    assert bad.outcome == "bad_request" and "rm" in bad.message


def test_returned_text_is_cut_at_the_limit(tmp_path: Path) -> None:
    exact, _ = once(tmp_path, [say("é" * 4)], limits=RunLimits(max_text_bytes=8))
    assert (exact.outcome, exact.text) == ("ok", "é" * 4)
    over, _ = once(tmp_path, [say("é" * 5)], limits=RunLimits(max_text_bytes=9))
    assert (over.outcome, over.text) == ("text_truncated", "é" * 4)


def test_output_budget_is_sent_and_a_cut_answer_fails(tmp_path: Path) -> None:
    result, llm = once(tmp_path, [say("half an ans", stop="max_tokens")],
                       limits=RunLimits(max_output_tokens=7))
    assert llm.requests[0].config.max_output_tokens == 7
    assert (result.outcome, result.text) == ("output_truncated", "half an ans")


def test_a_model_failure_is_an_outcome(tmp_path: Path) -> None:
    result, _ = once(tmp_path, [fail(401)])
    assert result.outcome == "model_error" and "auth" in result.message


def test_bad_limits_are_refused(tmp_path: Path) -> None:
    result, llm = once(tmp_path, [say("x")], limits=RunLimits(max_model_calls=0))
    assert result.outcome == "bad_request" and not llm.requests


def test_progress_names_model_and_tool_calls(tmp_path: Path) -> None:
    lines: list[str] = []
    result, _ = once(tmp_path, [call("ls"), say("ok")], progress=lines.append)
    assert result.ok
    assert lines[0] == "model call 1/16" and lines[1].startswith("tool ls")


def test_probe_succeeds_only_on_exactly_the_ping_call() -> None:
    good = ScriptedLlm([call(PING, marker=PING_MARKER)])
    result = run(lambda: probe(good))
    assert result.ok and result.usage.model_calls == 1
    request = good.requests[0]
    assert declared(request) == [PING] and request.config.max_output_tokens == 256
    for wrong in (say("pong"), call(PING, marker="other"), call("read", path="x"),
                  Turn(calls=[Call(name=PING, args={"marker": PING_MARKER})] * 2)):
        assert run(lambda: probe(ScriptedLlm([wrong]))).outcome == "tool_calling_unsupported"
    assert run(lambda: probe(ScriptedLlm([fail(500)]))).outcome == "model_error"


@pytest.fixture
def srv() -> Iterator[ServerThread]:
    with ServerThread() as thread:
        yield thread


@pytest.mark.parametrize("kind", KINDS)
def test_probe_asks_once_without_streaming_and_reads_the_call(kind: ProviderKind,
                                                               srv: ServerThread) -> None:
    # A local server whose streamed tool calls are broken is what the probe is for: its one
    # request must not stream, and the whole answer (the ping call) must still be read.
    srv.server.add(Turn(text="Calling it.", calls=[Call(name=PING, args={"marker": PING_MARKER})]))
    llm = build_model(config_for(kind, srv))

    async def go() -> RunResult:
        try:
            return await probe(llm)
        finally:
            await close_model(llm)

    result = run(go)
    assert (result.outcome, result.text, result.usage.model_calls) == ("ok", "Calling it.", 1)
    [sent] = srv.server.model_requests()
    if kind == "gemini":
        assert sent.path.endswith(":generateContent")
    else:
        assert sent.body.get("stream") in (None, False)
