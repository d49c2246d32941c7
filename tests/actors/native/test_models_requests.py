"""What each adapter puts on the wire, in its API's own terms (the recorded request bodies)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.genai import types

from actors.native.models import ProviderKind, build_model, close_model, usage_of
from tests.actors.native.modelkit import (
    config_for, final_of, one_call, request, run, tool_result, user,
)
from tests.fakes.model_script import Call, Turn, call, say
from tests.fakes.model_thread import ServerThread


@pytest.fixture
def srv() -> Iterator[ServerThread]:
    with ServerThread() as thread:
        yield thread


def _round_trip(kind: ProviderKind, srv: ServerThread, first: Turn,
                **config: Any) -> tuple[Any, Any, list[types.Part]]:
    """Two calls: ``first`` (which calls ``write``), then the tool result; both bodies sent."""
    srv.server.add(first, say("done"))
    llm = build_model(config_for(kind, srv, **config))

    async def go() -> list[types.Part]:
        try:
            responses = [r async for r in llm.generate_content_async(request(user("save")), True)]
            final = final_of(responses)
            assert final.content is not None
            [fc] = final.get_function_calls()
            req = request(user("save"), final.content, tool_result(fc, "ok"))
            [_ async for _ in llm.generate_content_async(req, True)]
            return list(final.content.parts or [])
        finally:
            await close_model(llm)

    parts = run(go)
    one, two = srv.server.model_requests()
    return one.body, two.body, parts


def test_openai_responses_is_stateless(srv: ServerThread) -> None:
    _, body, _ = _round_trip("openai", srv, call("write", path="a", content="b"))
    assert body["store"] is False and body["stream"] is True
    assert "previous_response_id" not in body
    assert body["instructions"] == "Be brief."
    assert body["input"][0] == {"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": "save"}]}
    assert [i["type"] for i in body["input"]] == ["message", "function_call",
                                                  "function_call_output"]
    assert body["tools"][0]["type"] == "function" and body["tools"][0]["name"] == "write"
    assert body["tools"][0]["strict"] is False
    assert body["tools"][0]["parameters"]["required"] == ["path", "content"]


def test_openai_reasoning_and_output_limit_when_asked(srv: ServerThread) -> None:
    srv.server.add(say("ok"))
    req = request(user("hi"))
    req.config.max_output_tokens = 321
    req.config.thinking_config = types.ThinkingConfig(include_thoughts=True)
    run(lambda: one_call(config_for("openai", srv), req))
    [sent] = srv.server.model_requests()
    assert (sent.body["reasoning"], sent.body["max_output_tokens"]) == ({"summary": "auto"}, 321)


@pytest.mark.parametrize(("field", "present"), [("max_completion_tokens", "max_completion_tokens"),
                                                ("max_tokens", "max_tokens")])
def test_chat_completions_request(srv: ServerThread, field: Any, present: str) -> None:
    _, body, _ = _round_trip("openai-chat", srv, call("write", path="a", content="b"),
                             chat_max_tokens_field=field)
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["messages"][2]["tool_calls"][0]["id"] == body["messages"][3]["tool_call_id"]
    srv.server.add(say("ok"))
    req = request(user("hi"))
    req.config.max_output_tokens = 77
    run(lambda: one_call(config_for("openai-chat", srv, chat_max_tokens_field=field), req))
    assert srv.server.model_requests()[-1].body[present] == 77


def test_anthropic_thinking_signature_and_cache_markers(srv: ServerThread) -> None:
    turn = Turn(thought="pondering", calls=[Call(name="write", args={"path": "a"})],
                input_tokens=11, cache_read_tokens=5, cache_write_tokens=7)
    first, second, parts = _round_trip("anthropic", srv, turn)
    assert first["max_tokens"] == 8192
    assert first["system"] == [{"type": "text", "text": "Be brief.",
                                "cache_control": {"type": "ephemeral"}}]
    assert second["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert [p.thought_signature for p in parts if p.thought] == [b"corral:anthropic:sig_1"]
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"type": "thinking", "thinking": "pondering",
                                       "signature": "sig_1"}
    assert assistant["content"][1]["type"] == "tool_use"


def test_anthropic_usage_keeps_cache_writes_apart(srv: ServerThread) -> None:
    srv.server.add(Turn(text="hi", input_tokens=11, output_tokens=4, cache_read_tokens=5,
                        cache_write_tokens=7))
    final = final_of(run(lambda: one_call(config_for("anthropic", srv), request(user("hi")))))
    usage = usage_of(final)
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
            usage.cache_write_tokens) == (11, 4, 5, 7)
    assert final.usage_metadata is not None
    assert final.usage_metadata.prompt_token_count == 23


@pytest.mark.parametrize("kind", ["gemini", "openai", "openai-chat"])
def test_foreign_thought_signatures_are_not_sent(kind: ProviderKind, srv: ServerThread) -> None:
    srv.server.add(say("ok"))
    signed = types.Part(text="secret reasoning", thought=True,
                        thought_signature=b"corral:anthropic:sig_x")
    history = [user("hi"), types.Content(role="model", parts=[signed, types.Part(text="hello")]),
               user("again")]
    run(lambda: one_call(config_for(kind, srv), request(*history)))
    [sent] = srv.server.model_requests()
    assert "secret reasoning" not in str(sent.body)
    assert "sig_x" not in str(sent.body)
    assert "hello" in str(sent.body)


def test_gemini_request_shape(srv: ServerThread) -> None:
    _, body, _ = _round_trip("gemini", srv, call("write", path="a", content="b"))
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    roles = [c["role"] for c in body["contents"]]
    assert roles == ["user", "model", "user"]
    assert body["contents"][2]["parts"][0]["functionResponse"]["response"] == {"result": "ok"}
