"""The ``openai-chat`` provider: ADK model over Chat Completions (official ``openai`` SDK).

The lingua franca of OpenAI-compatible servers (vLLM, Ollama, LM Studio, llama.cpp). Mapping:

* system instruction → a ``system`` message; consecutive model text and tool calls → one
  ``assistant`` message with ``tool_calls``; each tool result → a ``tool`` message with its
  ``tool_call_id``; user images → ``image_url`` data URLs; thoughts are not sent back.
* function declarations → ``function`` tools; the output limit goes in
  ``max_completion_tokens`` (or ``max_tokens``, per ``chat_max_tokens_field``).
* ``stream_options.include_usage`` is always asked for when streaming: the last chunk (no
  choices) carries usage, ``prompt_tokens`` including ``prompt_tokens_details.cached_tokens``.
* stream: ``delta.content`` → text; ``delta.reasoning_content`` or ``delta.reasoning`` (the
  extensions servers use for thinking models) → thought; tool calls are assembled from their
  indexed fragments and emitted whole in the final response; ``finish_reason: length`` →
  ``MAX_TOKENS``.
* not streamed (``stream=False``): one ``chat.completion`` whose message is read the same way
  (``content``, ``reasoning_content``/``reasoning``, whole ``tool_calls``, ``usage``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncGenerator
from typing import Any, cast

import openai
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam, ChatCompletionToolParam
from openai.types.chat.chat_completion_chunk import ChoiceDelta

from protocol.events import Usage

from ._assembly import TurnBuilder, parse_arguments
from ._base import SdkLlm
from ._convert import Item, conversation, settings, system_text, tool_schemas
from .errors import ModelError
from .openai_responses import classify_openai, openai_client

__all__ = ["OpenAIChatLlm"]


class OpenAIChatLlm(SdkLlm):
    """ADK ``BaseLlm`` for ``kind = "openai-chat"`` (see the module docstring)."""

    def _client(self) -> openai.AsyncOpenAI:
        if self._sdk is None:
            self._sdk, self._close_pool = openai_client(self.provider)
        return cast(openai.AsyncOpenAI, self._sdk)

    async def _attempt(self, llm_request: LlmRequest,
                       stream: bool) -> AsyncGenerator[LlmResponse, None]:
        config, wanted = self.provider, settings(llm_request)
        tools = [{"type": "function", "function": {"name": name, "description": description,
                                                   "parameters": schema}}
                 for name, description, schema in tool_schemas(llm_request)]
        extra: dict[str, Any] = {}
        if wanted.max_output_tokens:
            extra[config.chat_max_tokens_field] = wanted.max_output_tokens
        params: dict[str, Any] = dict(
            model=config.model,
            messages=cast(list[ChatCompletionMessageParam],
                          _messages(system_text(llm_request), conversation(llm_request))),
            tools=cast(list[ChatCompletionToolParam], tools) if tools else openai.omit,
            temperature=openai.omit if wanted.temperature is None else wanted.temperature,
            top_p=openai.omit if wanted.top_p is None else wanted.top_p,
            stop=wanted.stop or openai.omit,
            **extra)
        turn = TurnBuilder(config.spec)
        if not stream:
            completion = await self._client().chat.completions.create(stream=False, **params)
            yield _whole(turn, completion)
            return
        chunks = await self._client().chat.completions.create(
            stream=True, stream_options={"include_usage": True}, **params)
        calls: dict[int, list[str]] = {}
        finished = False
        async with chunks:
            async for chunk in chunks:
                if chunk.usage is not None:
                    _add_usage(turn, chunk.usage)
                    finished = True
                for choice in chunk.choices[:1]:
                    for partial in _deltas(turn, choice.delta, calls):
                        yield partial
                    if choice.finish_reason is not None:
                        finished = True
                        if choice.finish_reason == "length":
                            turn.finish_reason = types.FinishReason.MAX_TOKENS
        if not finished:
            raise ModelError("native.protocol.malformed", "the completion stream ended early")
        for index in sorted(calls):
            call_id, name, arguments = calls[index]
            turn.call(call_id, name, parse_arguments(arguments, name))
        yield turn.final()

    def _classify_sdk(self, exc: Exception) -> ModelError | None:
        return classify_openai(exc, self.provider.api_key, self._error_body)


def _whole(turn: TurnBuilder, completion: ChatCompletion) -> LlmResponse:
    """The final response of a completion that was not streamed (fed to ``turn`` as one delta)."""
    if not completion.choices:
        raise ModelError("native.protocol.malformed", "the completion has no choices")
    choice = completion.choices[0]
    message = choice.message
    thought = _reasoning(message.model_extra or {})
    if thought:
        turn.thought(thought)
    if message.content:
        turn.text(message.content)
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)  # custom tool calls have none: not ours
        if function is not None:
            turn.call(call.id, function.name, parse_arguments(function.arguments, function.name))
    if completion.usage is not None:
        _add_usage(turn, completion.usage)
    if choice.finish_reason == "length":
        turn.finish_reason = types.FinishReason.MAX_TOKENS
    return turn.final()


def _add_usage(turn: TurnBuilder, usage: CompletionUsage) -> None:
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details else 0
    turn.usage = Usage(input_tokens=max(usage.prompt_tokens - cached, 0),
                       output_tokens=usage.completion_tokens, cache_read_tokens=cached)
    done = usage.completion_tokens_details
    turn.reasoning_tokens = (done.reasoning_tokens or 0) if done else 0


def _reasoning(extra: dict[str, Any]) -> str | None:
    """The thinking text of a delta or message: ``reasoning_content`` or ``reasoning``, the
    extensions servers use for thinking models."""
    thought = extra.get("reasoning_content") or extra.get("reasoning")
    return thought if isinstance(thought, str) else None


def _deltas(turn: TurnBuilder, delta: ChoiceDelta,
            calls: dict[int, list[str]]) -> list[LlmResponse]:
    """Feed one chunk's delta to ``turn``; the partial responses it gives."""
    out: list[LlmResponse] = []
    thought = _reasoning(delta.model_extra or {})
    if thought and (partial := turn.thought(thought)) is not None:
        out.append(partial)
    if delta.content and (partial := turn.text(delta.content)) is not None:
        out.append(partial)
    for fragment in delta.tool_calls or []:
        slot = calls.setdefault(fragment.index, ["", "", ""])
        if fragment.id:
            slot[0] = fragment.id
        if fragment.function is not None:
            slot[1] += fragment.function.name or ""
            slot[2] += fragment.function.arguments or ""
    return out


def _messages(system: str, items: list[Item]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    assistant: dict[str, Any] | None = None
    for item in items:
        if item.role == "model" and item.kind in ("text", "call"):
            if assistant is None:
                assistant = {"role": "assistant", "content": None}
                out.append(assistant)
            if item.kind == "text":
                assistant["content"] = (assistant["content"] or "") + item.text
            else:
                assistant.setdefault("tool_calls", []).append({
                    "id": item.call_id, "type": "function", "function": {
                        "name": item.name,
                        "arguments": json.dumps(item.args, ensure_ascii=False)}})
            continue
        if item.kind == "thought":
            continue
        assistant = None
        if item.kind == "result":
            out.append({"role": "tool", "tool_call_id": item.call_id, "content": item.text})
        elif item.kind == "text":
            out.append({"role": "user", "content": item.text})
        elif item.kind == "image":
            url = f"data:{item.mime_type};base64,{base64.b64encode(item.data).decode()}"
            out.append({"role": "user", "content": [{"type": "image_url",
                                                     "image_url": {"url": url}}]})
    return out
