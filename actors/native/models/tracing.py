"""``gen_ai`` chat spans of the model calls, when the turn that makes them is traced.

The worker sets ``TURN`` (a context variable) in the task of each traced turn
(``actors.native.worker.tracing``); every ``SdkLlm`` call made in that task, or in a task it
starts (a subagent's), is then a child span of the daemon's ``corral.turn``: ``chat MODEL`` with
the GenAI conventions' attributes (``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.*``), an error
status when the call failed. Prompt text is never an attribute. With ``TURN`` unset (no
telemetry), a call costs one context-variable read and nothing of OpenTelemetry is imported.
"""

from __future__ import annotations

import contextvars
from typing import Any, Protocol

from google.adk.models.llm_response import LlmResponse

from actors.native.models.usage import usage_of

__all__ = ["TURN", "ModelCall", "TurnTrace", "end_call", "start_call"]


class TurnTrace(Protocol):
    """A traced turn: starts a span under the turn's context."""

    def start(self, name: str, attributes: dict[str, Any]) -> Any: ...


TURN: contextvars.ContextVar[TurnTrace | None] = contextvars.ContextVar("corral_turn_trace", default=None)


class ModelCall:
    """One model call's span, and the last final response it saw."""

    __slots__ = ("response", "span")

    def __init__(self, span: Any) -> None:
        self.span = span
        self.response: LlmResponse | None = None


def start_call(provider: str, model: str) -> ModelCall | None:
    """The span of a model call about to start, or ``None`` when the turn is not traced."""
    turn = TURN.get()
    if turn is None:
        return None
    return ModelCall(turn.start(f"chat {model}", {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider,
        "gen_ai.request.model": model}))


def end_call(call: ModelCall, error: BaseException | None) -> None:
    """End the call's span with its response's usage and finish reason, or with ``error``."""
    from opentelemetry.trace import Status, StatusCode  # loaded by the worker's tracer already

    span, response = call.span, call.response
    if response is not None:
        if response.model_version:
            span.set_attribute("gen_ai.response.model", response.model_version)
        if response.finish_reason is not None:
            span.set_attribute("gen_ai.response.finish_reasons", [str(response.finish_reason.name).lower()])
        usage = usage_of(response)
        if usage is not None:
            span.set_attributes({
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
                "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens})
    if error is not None:
        span.set_attribute("error.type", type(error).__name__)
        span.set_status(Status(StatusCode.ERROR, str(getattr(error, "code", "")) or type(error).__name__))
    span.end()
