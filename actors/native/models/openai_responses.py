"""The ``openai`` provider: ADK model over the OpenAI Responses API (official ``openai`` SDK).

Stateless by design: every request carries the whole conversation as input items,
``store: false``, and never a ``previous_response_id``, so a restarted worker and any
Responses-compatible server see the same thing. Mapping:

* system instruction → ``instructions``; user and model text → messages; a model tool call →
  a ``function_call`` item and its result → ``function_call_output`` (same ``call_id``);
  user images → ``input_image`` data URLs; thoughts are not sent back (without stored or
  encrypted reasoning there is nothing the API can use).
* function declarations → ``function`` tools (``strict: false``, schemas as declared).
* ``thinking_config.include_thoughts`` → ``reasoning: {summary: "auto"}``; the summary streams
  as thought deltas (and ``response.reasoning_text.delta`` from open-weight servers too).
* stream: ``response.output_text.delta`` → text, function calls taken whole from
  ``response.output_item.done``, usage from ``response.completed`` (``incomplete`` →
  ``MAX_TOKENS``), ``response.failed`` / ``error`` → ``ModelError`` by the error's code.
* not streamed (``stream=False``): one ``response`` whose output items (reasoning summaries,
  message text, function calls), usage and status are read the same way.
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
from openai.types.responses import Response, ResponseInputParam, ToolParam

from protocol.events import Usage

from ._assembly import TurnBuilder, parse_arguments
from ._base import SdkLlm, wire_policy
from ._convert import Item, conversation, settings, system_text, tool_schemas
from ._retry import parse_retry_after
from ._wire import ClosePool, httpx2_client
from .config import ProviderConfig
from .errors import ModelError, error_for_status, redact

__all__ = ["OpenAIResponsesLlm", "openai_client", "stream_error"]

_NO_KEY = "corral-no-key"
"""Placeholder the SDK is given for an empty key (it insists on one); the wire drops it."""

_STREAM_CODES = {
    "rate_limit_exceeded": "native.limit.rate_limited",
    "server_error": "native.overloaded.server_error",
    "server_is_overloaded": "native.overloaded.server",
    "overloaded": "native.overloaded.server",
    "insufficient_quota": "native.entitlement.quota",
    "invalid_api_key": "native.auth.invalid_key",
}


def openai_client(config: ProviderConfig) -> tuple[openai.AsyncOpenAI, ClosePool]:
    """An ``AsyncOpenAI`` bound to ``config`` only (retries off, our transport), and its closer."""
    http, close = httpx2_client(wire_policy(config))
    client = openai.AsyncOpenAI(api_key=config.api_key or _NO_KEY, base_url=config.base_url,
                                organization=None, project=None, max_retries=0,
                                timeout=http.timeout, http_client=http)
    return client, close


def stream_error(code: str | None, message: str | None, secret: str) -> ModelError:
    """A failure reported inside a stream (no HTTP status), classified by its error code."""
    ours = _STREAM_CODES.get(code or "", "native.unknown.error")
    return ModelError(ours, redact(f"{code or 'error'}: {message or 'the model call failed'}",
                                   secret))


class OpenAIResponsesLlm(SdkLlm):
    """ADK ``BaseLlm`` for ``kind = "openai"`` (see the module docstring)."""

    def _client(self) -> openai.AsyncOpenAI:
        if self._sdk is None:
            self._sdk, self._close_pool = openai_client(self.provider)
        return cast(openai.AsyncOpenAI, self._sdk)

    async def _attempt(self, llm_request: LlmRequest,
                       stream: bool) -> AsyncGenerator[LlmResponse, None]:
        config, wanted = self.provider, settings(llm_request)
        tools = [{"type": "function", "name": name, "description": description,
                  "parameters": schema, "strict": False}
                 for name, description, schema in tool_schemas(llm_request)]
        extra: dict[str, Any] = {}
        if wanted.include_thoughts:
            extra["reasoning"] = {"summary": "auto"}
        params: dict[str, Any] = dict(
            model=config.model, store=False,
            input=cast(ResponseInputParam, _input_items(conversation(llm_request))),
            instructions=system_text(llm_request) or openai.omit,
            tools=cast(list[ToolParam], tools) if tools else openai.omit,
            max_output_tokens=wanted.max_output_tokens or openai.omit,
            temperature=openai.omit if wanted.temperature is None else wanted.temperature,
            top_p=openai.omit if wanted.top_p is None else wanted.top_p,
            **extra)
        turn = TurnBuilder(config.spec)
        if not stream:
            response = await self._client().responses.create(stream=False, **params)
            yield _whole(turn, response, config.api_key)
            return
        events = await self._client().responses.create(stream=True, **params)
        finished = False
        async with events:
            async for event in events:
                partial: LlmResponse | None = None
                if event.type == "response.output_text.delta":
                    partial = turn.text(event.delta)
                elif event.type in ("response.reasoning_summary_text.delta",
                                    "response.reasoning_text.delta"):
                    partial = turn.thought(event.delta)
                elif event.type == "response.output_item.done":
                    item = event.item
                    if item.type == "function_call":
                        turn.call(item.call_id, item.name, parse_arguments(item.arguments,
                                                                           item.name))
                elif event.type in ("response.completed", "response.incomplete"):
                    _ended(turn, event.response)
                    if event.type == "response.incomplete":
                        turn.finish_reason = types.FinishReason.MAX_TOKENS
                    finished = True
                elif event.type == "response.failed":
                    failure = event.response.error
                    raise stream_error(failure.code if failure else None,
                                       failure.message if failure else None, config.api_key)
                elif event.type == "error":
                    raise stream_error(event.code, event.message, config.api_key)
                if partial is not None:
                    yield partial
        if not finished:
            raise ModelError("native.protocol.malformed", "the response stream ended early")
        yield turn.final()

    def _classify_sdk(self, exc: Exception) -> ModelError | None:
        return classify_openai(exc, self.provider.api_key, self._error_body)


def classify_openai(exc: Exception, secret: str, body_of: Any) -> ModelError | None:
    """An ``openai`` SDK exception as a ``ModelError`` (shared with Chat Completions)."""
    if isinstance(exc, openai.APIStatusError):
        message, code = body_of(exc.body)
        return error_for_status(exc.status_code, message or exc.message, code=code,
                                retry_after=parse_retry_after(exc.response.headers),
                                secret=secret)
    if isinstance(exc, openai.APITimeoutError):
        return ModelError("native.overloaded.timeout", "the model endpoint timed out")
    if isinstance(exc, openai.APIConnectionError):
        return None  # the transport error underneath says which (connection, too large, …)
    if isinstance(exc, openai.APIError):
        message, code = body_of(exc.body)
        return stream_error(code, message or exc.message, secret)
    return None


def _whole(turn: TurnBuilder, response: Response, secret: str) -> LlmResponse:
    """The final response of a response that was not streamed (its output items fed to ``turn``)."""
    if response.status == "failed":
        failure = response.error
        raise stream_error(failure.code if failure else None,
                           failure.message if failure else None, secret)
    for item in response.output:
        if item.type == "reasoning":
            for summary in item.summary:
                turn.thought(summary.text)
            for content in item.content or []:
                turn.thought(content.text)
        elif item.type == "message":
            for part in item.content:
                if part.type == "output_text":
                    turn.text(part.text)
        elif item.type == "function_call":
            turn.call(item.call_id, item.name, parse_arguments(item.arguments, item.name))
    _ended(turn, response)
    return turn.final()


def _ended(turn: TurnBuilder, response: Response) -> None:
    """Usage and finish reason of a completed (or incomplete: ``MAX_TOKENS``) response."""
    usage = response.usage
    if usage is not None:
        cached = usage.input_tokens_details.cached_tokens or 0
        turn.usage = Usage(input_tokens=max(usage.input_tokens - cached, 0),
                           output_tokens=usage.output_tokens, cache_read_tokens=cached)
        turn.reasoning_tokens = usage.output_tokens_details.reasoning_tokens or 0
    if response.status == "incomplete":
        turn.finish_reason = types.FinishReason.MAX_TOKENS


def _input_items(items: list[Item]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        if item.kind == "text":
            if item.role == "model":
                out.append({"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": item.text, "annotations": []}]})
            else:
                out.append({"type": "message", "role": "user",
                            "content": [{"type": "input_text", "text": item.text}]})
        elif item.kind == "image" and item.role == "user":
            url = f"data:{item.mime_type};base64,{base64.b64encode(item.data).decode()}"
            out.append({"type": "message", "role": "user",
                        "content": [{"type": "input_image", "image_url": url,
                                     "detail": "auto"}]})
        elif item.kind == "call":
            out.append({"type": "function_call", "call_id": item.call_id, "name": item.name,
                        "arguments": json.dumps(item.args, ensure_ascii=False)})
        elif item.kind == "result":
            out.append({"type": "function_call_output", "call_id": item.call_id,
                        "output": item.text})
    return out
