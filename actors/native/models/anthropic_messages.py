"""The ``anthropic`` provider: ADK model over the Messages API (official ``anthropic`` SDK).

Mapping:

* system instruction → ``system``; consecutive contents of one role → one message (the API wants
  roles to alternate); model text → ``text``, tool calls → ``tool_use``, tool results →
  ``tool_result`` in the next user message, user images → base64 ``image`` blocks. A thought
  goes back as a ``thinking`` block only with a signature this provider issued (required when
  thinking and tools mix); other thoughts are dropped.
* prompt caching: the system block and the last block of the last message carry
  ``cache_control: ephemeral``, so each request reuses the previous one's prefix; cache reads and
  writes come back apart in usage.
* ``temperature`` and ``top_p`` are not sent: the installed SDK's ``messages.create`` no longer
  has them (the API decides sampling).
* ``max_tokens`` is required by the API: the request's ``max_output_tokens`` or
  ``DEFAULT_MAX_TOKENS``; ``thinking_config.include_thoughts`` → ``thinking: enabled`` with the
  request's budget (at least 1024, default 4096) and ``display: summarized``, ``max_tokens``
  raised above the budget.
* stream: text and thinking deltas → partial responses, ``signature_delta`` → the thought's
  signature, ``input_json_delta`` fragments → one call at ``content_block_stop``; usage from
  ``message_start`` and ``message_delta``; ``stop_reason: max_tokens`` → ``MAX_TOKENS``; an
  ``error`` event → ``ModelError`` by its type (``overloaded_error`` → overloaded, …).
* not streamed (``stream=False``): one ``message`` whose blocks are read the same way
  (``text``, ``thinking`` with its signature, ``tool_use`` with its ``input``).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator
from typing import Any, cast

import anthropic
from anthropic.types import Message, MessageParam, TextBlockParam, ToolParam
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from protocol.events import Usage

from ._assembly import TurnBuilder, parse_arguments, signature_for, tag_signature
from ._base import SdkLlm, wire_policy
from ._convert import Item, conversation, settings, system_text, tool_schemas
from ._retry import parse_retry_after
from ._wire import httpx2_client
from .errors import ModelError, error_for_status, redact

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicLlm"]

DEFAULT_MAX_TOKENS = 8192
"""Output limit sent when the request sets none (every current Claude model allows it)."""

_NO_KEY = "corral-no-key"
_EPHEMERAL = {"type": "ephemeral"}
_STREAM_TYPES = {
    "overloaded_error": "native.overloaded.server",
    "api_error": "native.overloaded.server_error",
    "rate_limit_error": "native.limit.rate_limited",
    "authentication_error": "native.auth.invalid_key",
    "permission_error": "native.auth.forbidden",
}


class AnthropicLlm(SdkLlm):
    """ADK ``BaseLlm`` for ``kind = "anthropic"`` (see the module docstring)."""

    def _client(self) -> anthropic.AsyncAnthropic:
        if self._sdk is None:
            config = self.provider
            http, self._close_pool = httpx2_client(wire_policy(config))
            self._sdk = anthropic.AsyncAnthropic(
                api_key=config.api_key or _NO_KEY, base_url=config.base_url, max_retries=0,
                timeout=http.timeout, http_client=http, open_telemetry=False)
        return cast(anthropic.AsyncAnthropic, self._sdk)

    async def _attempt(self, llm_request: LlmRequest,
                       stream: bool) -> AsyncGenerator[LlmResponse, None]:
        config, wanted = self.provider, settings(llm_request)
        tools = [{"name": name, "description": description, "input_schema": schema}
                 for name, description, schema in tool_schemas(llm_request)]
        max_tokens = wanted.max_output_tokens or DEFAULT_MAX_TOKENS
        extra: dict[str, Any] = {}
        if wanted.include_thoughts:
            budget = max(wanted.thinking_budget or 4096, 1024)
            extra["thinking"] = {"type": "enabled", "budget_tokens": budget,
                                 "display": "summarized"}
            max_tokens = max(max_tokens, budget + 1024)
        system = system_text(llm_request)
        params: dict[str, Any] = dict(
            model=config.model, max_tokens=max_tokens,
            messages=cast(list[MessageParam], _messages(conversation(llm_request))),
            system=cast(list[TextBlockParam], [{"type": "text", "text": system,
                                                "cache_control": _EPHEMERAL}])
            if system else anthropic.omit,
            tools=cast(list[ToolParam], tools) if tools else anthropic.omit,
            stop_sequences=wanted.stop or anthropic.omit,
            **extra)
        turn = TurnBuilder(config.spec)
        if not stream:
            yield _whole(turn, await self._client().messages.create(stream=False, **params))
            return
        events = await self._client().messages.create(stream=True, **params)
        pending: dict[int, list[str]] = {}
        finished = False
        async with events:
            async for event in events:
                partial: LlmResponse | None = None
                if event.type == "message_start":
                    _add_usage(turn, event.message.usage)
                elif event.type == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        pending[event.index] = [block.id, block.name, ""]
                elif event.type == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        partial = turn.text(delta.text)
                    elif delta.type == "thinking_delta":
                        partial = turn.thought(delta.thinking)
                    elif delta.type == "signature_delta":
                        turn.signature(tag_signature("anthropic", delta.signature))
                    elif delta.type == "input_json_delta" and event.index in pending:
                        pending[event.index][2] += delta.partial_json
                elif event.type == "content_block_stop" and event.index in pending:
                    call_id, name, arguments = pending.pop(event.index)
                    turn.call(call_id, name, parse_arguments(arguments, name))
                elif event.type == "message_delta":
                    _add_usage(turn, event.usage)
                    if event.delta.stop_reason == "max_tokens":
                        turn.finish_reason = types.FinishReason.MAX_TOKENS
                elif event.type == "message_stop":
                    finished = True
                if partial is not None:
                    yield partial
        if not finished:
            raise ModelError("native.protocol.malformed", "the message stream ended early")
        yield turn.final()

    def _classify_sdk(self, exc: Exception) -> ModelError | None:
        secret = self.provider.api_key
        if isinstance(exc, anthropic.APIStatusError):
            message, kind = self._error_body(exc.body)
            if exc.status_code < 400:  # an ``error`` event inside a 200 stream
                code = _STREAM_TYPES.get(kind or "", "native.unknown.error")
                return ModelError(code, redact(f"{kind}: {message}", secret))
            return error_for_status(exc.status_code, message or exc.message, code=kind,
                                    retry_after=parse_retry_after(exc.response.headers),
                                    secret=secret)
        if isinstance(exc, anthropic.APITimeoutError):
            return ModelError("native.overloaded.timeout", "the model endpoint timed out")
        return None


def _whole(turn: TurnBuilder, message: Message) -> LlmResponse:
    """The final response of a message that was not streamed (each block fed to ``turn``)."""
    for block in message.content:
        if block.type == "text":
            turn.text(block.text)
        elif block.type == "thinking":
            turn.thought(block.thinking)
            turn.signature(tag_signature("anthropic", block.signature))
        elif block.type == "tool_use":
            if not isinstance(block.input, dict):
                raise ModelError("native.protocol.malformed",
                                 f"the model's arguments for {block.name!r} are not a JSON object")
            turn.call(block.id, block.name, block.input)
    _add_usage(turn, message.usage)
    if message.stop_reason == "max_tokens":
        turn.finish_reason = types.FinishReason.MAX_TOKENS
    return turn.final()


def _add_usage(turn: TurnBuilder, usage: Any) -> None:
    """Merge a ``message_start`` or ``message_delta`` usage (later non-null figures win)."""
    now = turn.usage
    turn.usage = Usage(
        input_tokens=getattr(usage, "input_tokens", None) or now.input_tokens,
        output_tokens=getattr(usage, "output_tokens", None) or now.output_tokens,
        cache_read_tokens=getattr(usage, "cache_read_input_tokens", None)
        or now.cache_read_tokens,
        cache_write_tokens=getattr(usage, "cache_creation_input_tokens", None)
        or now.cache_write_tokens)


def _block(item: Item) -> dict[str, Any] | None:
    if item.kind == "text":
        return {"type": "text", "text": item.text}
    if item.kind == "thought":
        signature = signature_for("anthropic", item.signature)
        if signature is None:
            return None
        return {"type": "thinking", "thinking": item.text, "signature": signature}
    if item.kind == "call":
        return {"type": "tool_use", "id": item.call_id, "name": item.name, "input": item.args}
    if item.kind == "result":
        return {"type": "tool_result", "tool_use_id": item.call_id, "content": item.text}
    return {"type": "image", "source": {"type": "base64", "media_type": item.mime_type,
                                        "data": base64.b64encode(item.data).decode()}}


def _messages(items: list[Item]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        block = _block(item)
        if block is None:
            continue
        role = "assistant" if item.role == "model" else "user"
        if out and out[-1]["role"] == role:
            out[-1]["content"].append(block)
        else:
            out.append({"role": role, "content": [block]})
    if out:
        last = out[-1]["content"][-1]
        if last["type"] != "thinking":
            last["cache_control"] = _EPHEMERAL
    return out
