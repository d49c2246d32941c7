"""The adapters and the scripted fake inside a real ADK runner: a tool turn end to end.

What the worker will do, minus the worker: an ``LlmAgent`` with a ``write`` tool, streaming on,
the model from ``build_model`` against the fake server (or ``ScriptedLlm`` in process). The
tool must run with the model's arguments and the second model call must carry its result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.events.event import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.runners import InMemoryRunner

from actors.native.models import ModelError, ProviderKind, build_model, close_model, usage_of
from tests.actors.native.modelkit import KINDS, config_for, request, run, user, wire_calls
from tests.fakes.model_script import call, fail, hang, say
from tests.fakes.model_thread import ServerThread
from tests.fakes.scripted_llm import ScriptedLlm


@pytest.fixture
def srv() -> Iterator[ServerThread]:
    with ServerThread() as thread:
        yield thread


async def _turn(llm: BaseLlm, prompt: str, written: dict[str, str]) -> list[Event]:
    def write(path: str, content: str) -> dict[str, Any]:
        """Write ``content`` to the file at ``path``."""
        written[path] = content
        return {"result": f"wrote {len(content)} bytes to {path}"}

    agent = LlmAgent(name="coder", model=llm, instruction="You write files.", tools=[write])
    runner = InMemoryRunner(agent=agent, app_name="corral-test")
    session = await runner.session_service.create_session(app_name="corral-test", user_id="u")
    try:
        return [event async for event in runner.run_async(
            user_id="u", session_id=session.id, new_message=user(prompt),
            run_config=RunConfig(streaming_mode=StreamingMode.SSE))]
    finally:
        await runner.close()


def _final_text(events: list[Event]) -> str:
    return "".join(p.text or "" for e in events if not e.partial and e.content
                   for p in e.content.parts or [] if p.text and not p.thought)


@pytest.mark.parametrize("kind", KINDS)
def test_tool_turn_through_an_adk_runner(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(call("write", path="a.txt", content="hello"), say("Saved a.txt."))
    written: dict[str, str] = {}
    llm = build_model(config_for(kind, srv))

    async def go() -> list[Event]:
        try:
            return await _turn(llm, "save hello to a.txt", written)
        finally:
            await close_model(llm)

    events = run(go)
    assert written == {"a.txt": "hello"}
    assert _final_text(events) == "Saved a.txt."
    first, second = srv.server.model_requests()
    assert wire_calls(kind, second.body) == (
        [("write", {"path": "a.txt", "content": "hello"})],
        [("write", "wrote 5 bytes to a.txt")])
    finals = [e for e in events if not e.partial and usage_of(e) is not None]
    assert len(finals) == 2


def test_scripted_llm_plays_a_tool_turn() -> None:
    llm = ScriptedLlm([call("write", path="b.txt", content="bee"), say("done", thought="ok")])
    written: dict[str, str] = {}
    events = run(lambda: _turn(llm, "save", written))
    assert written == {"b.txt": "bee"}
    assert _final_text(events) == "done"
    assert [p.text for e in events if e.partial and e.content
            for p in e.content.parts or []] == ["ok", "done"]
    first, second = llm.requests
    [response] = [p.function_response for p in second.contents[-1].parts or []]
    assert response is not None
    assert (response.name, response.response) == ("write", {"result": "wrote 3 bytes to b.txt"})
    assert len(first.contents) == 1
    usage = usage_of([e for e in events if not e.partial][-1])
    assert usage is not None and usage.input_tokens == 20


def test_scripted_llm_raises_scripted_failures() -> None:
    llm = ScriptedLlm([fail(429, retry_after=3)])
    with pytest.raises(ModelError) as caught:
        run(lambda: _turn(llm, "hi", {}))
    assert (caught.value.code, caught.value.retry_after) == ("native.limit.rate_limited", 3)
    boom = ScriptedLlm([RuntimeError("scripted crash")])
    with pytest.raises(RuntimeError, match="scripted crash"):
        run(lambda: _turn(boom, "hi", {}))


def test_scripted_llm_hang_until_cancelled_or_released() -> None:
    llm = ScriptedLlm([hang("halfway there"), hang("go on")])

    async def go() -> tuple[int, str]:
        seen = asyncio.Event()

        async def consume() -> None:
            async for event in llm.generate_content_async(request(user("hi")), stream=True):
                if event.partial:
                    seen.set()

        task = asyncio.create_task(consume())
        await seen.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        final: list[str] = []
        async for event in llm.generate_content_async(request(user("again")), stream=True):
            if event.partial:
                llm.release()
            elif event.content:
                final.extend(p.text or "" for p in event.content.parts or [])
        return llm.cancelled, "".join(final)

    assert run(go) == (1, "go on")
