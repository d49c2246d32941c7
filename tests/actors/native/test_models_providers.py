"""Each of the four model adapters against the fake server: streaming, tools, errors, keys, cancel.

The same neutral script drives every provider; what differs is only the wire, which the
recorded requests are checked against in each API's own shape.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from google.genai import types

from actors.native.models import ModelError, ProviderKind, build_model, close_model, usage_of
from tests.actors.native.modelkit import (
    CREDENTIAL_HEADERS, KINDS, config_for, final_of, one_call, request, run, texts, tool_result,
    user, wire_calls,
)
from tests.fakes.model_script import Call, Turn, call, fail, hang, say
from tests.fakes.model_thread import ServerThread

pytestmark = pytest.mark.parametrize("kind", KINDS)


@pytest.fixture
def srv() -> Iterator[ServerThread]:
    with ServerThread() as thread:
        yield thread


def test_streamed_text_turn(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(Turn(text="Hello, streaming world", thought="Let me think.", chunk=5,
                        input_tokens=40, output_tokens=9, reasoning_tokens=3,
                        cache_read_tokens=12))
    responses = run(lambda: one_call(config_for(kind, srv), request(user("hi"))))
    assert "".join(texts(responses)) == "Hello, streaming world"
    assert len(texts(responses)) == 5  # one partial per 5-character delta
    assert "".join(texts(responses, thought=True)) == "Let me think."
    final = final_of(responses)
    assert responses[-1] is final
    parts = final.content.parts if final.content else []
    assert [(p.text, bool(p.thought)) for p in parts or []] == [
        ("Let me think.", True), ("Hello, streaming world", False)]
    usage = usage_of(final)
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (40, 9, 12)
    assert usage.cache_write_tokens == 0
    assert final.usage_metadata is not None
    assert final.usage_metadata.prompt_token_count == 52  # Gemini's convention: cached inside
    assert final.finish_reason == types.FinishReason.STOP
    [sent] = srv.server.model_requests()
    assert sent.api == kind


def test_function_call_round_trip(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(call("write", path="notes.txt", content="hi there"), say("Wrote it."))
    config = config_for(kind, srv)

    async def two_calls() -> list[str]:
        llm = build_model(config)
        try:
            first = [r async for r in llm.generate_content_async(request(user("save")), True)]
            final = final_of(first)
            [fc] = final.get_function_calls()
            assert (fc.name, fc.args) == ("write", {"path": "notes.txt", "content": "hi there"})
            assert fc.id
            if kind != "gemini":  # ADK's own Gemini also shows the call in a partial
                assert not any(r.get_function_calls() for r in first if r.partial)
            assert final.content is not None
            req = request(user("save"), final.content, tool_result(fc, "wrote 8 bytes"))
            second = [r async for r in llm.generate_content_async(req, True)]
            return texts(second)
        finally:
            await close_model(llm)

    assert "".join(run(two_calls)) == "Wrote it."
    first, second = srv.server.model_requests()
    assert wire_calls(kind, first.body) == ([], [])
    assert wire_calls(kind, second.body) == (
        [("write", {"path": "notes.txt", "content": "hi there"})], [("write", "wrote 8 bytes")])


def test_rate_limit_is_retried_after_retry_after(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(fail(429, retry_after=0.3), say("after the wait"))
    started = time.monotonic()
    responses = run(lambda: one_call(config_for(kind, srv), request(user("hi"))))
    assert time.monotonic() - started >= 0.3
    assert "".join(texts(responses)) == "after the wait"
    assert len(srv.server.model_requests()) == 2


def test_unauthorized_is_auth_error_without_retry(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(fail(401, message="bad key sk-test-123456"), say("never"))
    with pytest.raises(ModelError) as caught:
        run(lambda: one_call(config_for(kind, srv), request(user("hi"))))
    assert caught.value.code == "native.auth.invalid_key"
    assert caught.value.error_class == "auth"
    assert "sk-test-123456" not in str(caught.value)
    assert len(srv.server.model_requests()) == 1


def test_server_errors_exhaust_retries(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(fail(500), fail(500), fail(500), say("too late"))
    with pytest.raises(ModelError) as caught:
        run(lambda: one_call(config_for(kind, srv), request(user("hi"))))
    assert caught.value.code == "native.overloaded.server_error"
    assert caught.value.status == 500
    assert len(srv.server.model_requests()) == 3  # the first try and max_retries=2


def test_overloaded_status_is_overloaded(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(fail(529))
    with pytest.raises(ModelError) as caught:
        run(lambda: one_call(config_for(kind, srv, max_retries=0), request(user("hi"))))
    assert caught.value.code == "native.overloaded.server"


def test_empty_key_sends_no_credentials(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(say("anonymous"), say("keyed"))
    run(lambda: one_call(config_for(kind, srv, key=""), request(user("hi"))))
    run(lambda: one_call(config_for(kind, srv, key="sk-real-key-42"), request(user("hi"))))
    anonymous, keyed = srv.server.model_requests()
    assert not set(CREDENTIAL_HEADERS) & set(anonymous.headers)
    assert "corral-no-key" not in str(anonymous)
    assert any("sk-real-key-42" in keyed.headers.get(h, "") for h in CREDENTIAL_HEADERS)


def test_cancelling_the_consumer_closes_the_stream(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(hang("partial answer"))
    llm = build_model(config_for(kind, srv))

    async def interrupt() -> float:
        first = asyncio.Event()

        async def consume() -> None:
            async for response in llm.generate_content_async(request(user("hi")), True):
                if response.partial:
                    first.set()

        task = asyncio.create_task(consume())
        try:
            await first.wait()
            await srv.until(lambda: srv.server.hanging == 1)
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await srv.until(lambda: srv.server.hang_closed == 1, timeout=1.0)
            return time.monotonic() - started
        finally:
            await close_model(llm)

    assert run(interrupt) < 1.0
    assert srv.server.hanging == 0


def test_max_tokens_finish_reason(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(Turn(text="cut sh", stop="max_tokens"))
    final = final_of(run(lambda: one_call(config_for(kind, srv), request(user("hi")))))
    assert final.finish_reason == types.FinishReason.MAX_TOKENS


def test_not_streaming_sends_one_plain_request_and_yields_only_the_final_response(
        kind: ProviderKind, srv: ServerThread) -> None:
    # What ``corral probe`` relies on: local servers whose streamed tool calls are broken are
    # asked without streaming, and the answer (tool call included) comes back whole.
    srv.server.add(Turn(text="whole answer", thought="Hm.", chunk=3, calls=[Call(name="write", args={"path": "a"})],
                        input_tokens=30, output_tokens=7, cache_read_tokens=4))
    responses = run(lambda: one_call(config_for(kind, srv), request(user("hi")), stream=False))
    assert [r.partial for r in responses] in ([False], [None])
    final = responses[0]
    assert final.content is not None
    assert [(p.text, bool(p.thought)) for p in final.content.parts or [] if p.text] == [
        ("Hm.", True), ("whole answer", False)]
    [fc] = final.get_function_calls()
    assert (fc.name, fc.args) == ("write", {"path": "a"})
    usage = usage_of(final)
    assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (30, 7, 4)
    [sent] = srv.server.model_requests()
    if kind == "gemini":
        assert sent.path.endswith(":generateContent")
    else:
        assert sent.body.get("stream") in (None, False)
        assert "stream_options" not in sent.body


def test_not_streaming_cut_answers_and_failures(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(Turn(text="cut sh", stop="max_tokens"), fail(401))
    final = final_of(run(lambda: one_call(config_for(kind, srv), request(user("hi")), stream=False)))
    assert final.finish_reason == types.FinishReason.MAX_TOKENS
    with pytest.raises(ModelError) as failed:
        run(lambda: one_call(config_for(kind, srv), request(user("hi")), stream=False))
    assert failed.value.code == "native.auth.invalid_key"
