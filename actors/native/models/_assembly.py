"""One streamed model answer as ADK wants it: partial deltas, then one aggregated final response.

Adapters feed ``TurnBuilder`` what their stream says (text and thought deltas, thought
signatures, whole tool calls, usage, the finish reason); each delta comes back as a
``partial=True`` ``LlmResponse`` to yield at once, and ``final()`` builds the ``partial=False``
response ADK acts on: the parts in arrival order with consecutive text of one kind merged
(thought, text, calls), usage in both forms (``usage``), and the finish reason. Tool calls are
never put in partial responses: ADK must not run a call whose arguments are still arriving.

Thought signatures are stored in ``Part.thought_signature`` prefixed with the provider
(``corral:anthropic:``), so a conversation that changes provider never sends one API's opaque
token to another.
"""

from __future__ import annotations

import json
from typing import Any

from google.adk.models.llm_response import LlmResponse
from google.genai import types

from protocol.events import Usage

from .errors import ModelError
from .usage import usage_fields

__all__ = ["TurnBuilder", "parse_arguments", "signature_for", "tag_signature"]


def tag_signature(provider: str, signature: str) -> bytes:
    """``signature`` as stored in a ``Part``: prefixed with the provider that issued it."""
    return f"corral:{provider}:{signature}".encode()


def signature_for(provider: str, stored: bytes | None) -> str | None:
    """The signature ``provider`` issued, or ``None`` if ``stored`` came from anywhere else."""
    prefix = f"corral:{provider}:".encode()
    if stored is None or not stored.startswith(prefix):
        return None
    return stored[len(prefix):].decode()


def parse_arguments(raw: str | None, name: str) -> dict[str, Any]:
    """A call's JSON arguments as a dict; blank means ``{}``; anything else is malformed."""
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ModelError("native.protocol.malformed",
                         f"the model's arguments for {name!r} are not JSON") from exc
    if not isinstance(value, dict):
        raise ModelError("native.protocol.malformed",
                         f"the model's arguments for {name!r} are not a JSON object")
    return value


class TurnBuilder:
    """Collects one answer; see the module docstring."""

    def __init__(self, model_version: str) -> None:
        self.model_version = model_version
        self.usage = Usage()
        self.reasoning_tokens = 0
        self.finish_reason = types.FinishReason.STOP
        self._parts: list[types.Part] = []
        self._run: list[str] = []
        self._run_thought: bool | None = None
        self._run_signature: bytes | None = None

    def text(self, delta: str) -> LlmResponse | None:
        """Record a text delta; the partial response to yield (``None`` for an empty delta)."""
        return self._delta(delta, thought=False)

    def thought(self, delta: str) -> LlmResponse | None:
        """Record a thought (reasoning) delta; the partial response to yield."""
        return self._delta(delta, thought=True)

    def signature(self, signature: bytes) -> None:
        """Attach an opaque signature to the thought being streamed."""
        if self._run_thought:
            self._run_signature = signature
        else:
            self._flush()
            self._parts.append(types.Part(text="", thought=True, thought_signature=signature))

    def call(self, call_id: str | None, name: str, args: dict[str, Any]) -> None:
        """Record one complete tool call."""
        self._flush()
        self._parts.append(types.Part(function_call=types.FunctionCall(
            id=call_id or None, name=name, args=args)))

    def final(self) -> LlmResponse:
        """The aggregated, non-partial response of the whole answer."""
        self._flush()
        return LlmResponse(
            content=types.Content(role="model", parts=list(self._parts)),
            partial=False, finish_reason=self.finish_reason, model_version=self.model_version,
            **usage_fields(self.usage, reasoning_tokens=self.reasoning_tokens))

    def _delta(self, delta: str, *, thought: bool) -> LlmResponse | None:
        if not delta:
            return None
        if self._run_thought is not thought:
            self._flush()
            self._run_thought = thought
        self._run.append(delta)
        part = types.Part(text=delta, thought=True) if thought else types.Part(text=delta)
        return LlmResponse(content=types.Content(role="model", parts=[part]), partial=True,
                           model_version=self.model_version)

    def _flush(self) -> None:
        if self._run_thought is not None:
            text = "".join(self._run)
            if self._run_thought:
                self._parts.append(types.Part(text=text, thought=True,
                                              thought_signature=self._run_signature))
            else:
                self._parts.append(types.Part(text=text))
        self._run, self._run_thought, self._run_signature = [], None, None
