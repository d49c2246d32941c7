"""What every adapter reads from an ADK ``LlmRequest``, independent of the target API.

The system instruction as one string, the function declarations with their JSON Schema, the
generation settings, and the conversation as a flat list of ``Item``s (text, thought, call,
result) in order, each with its role and a call id that is never empty: a call without an id
(a Gemini-era turn) gets ``call_<n>``, and its result (matched by name, in order) gets the same.
A tool result is sent as its text when it is ``{"result": "<text>"}`` or any one-key dict with a
string value (what a coding tool returns, so the model reads output without JSON escapes), else
as JSON.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from typing import Any, Literal

import msgspec
from google.adk.models.llm_request import LlmRequest
from google.genai import types

from .errors import ModelError

__all__ = ["Item", "Settings", "conversation", "settings", "system_text", "tool_schemas"]


class Item(msgspec.Struct, frozen=True, kw_only=True):
    """One piece of the conversation: ``kind`` says which fields are set."""

    role: Literal["user", "model"]
    kind: Literal["text", "thought", "call", "result", "image"]
    text: str = ""
    call_id: str = ""
    name: str = ""
    args: dict[str, Any] = {}
    signature: bytes | None = None
    mime_type: str = ""
    data: bytes = b""


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """Generation settings the request asked for (``None``: leave the API's default)."""

    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: list[str] | None = None
    include_thoughts: bool = False
    thinking_budget: int | None = None


def system_text(request: LlmRequest) -> str:
    """The system instruction as one string ("" when there is none)."""
    value: Any = request.config.system_instruction
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, types.Content):
        return "\n\n".join(p.text for p in value.parts or [] if p.text)
    if isinstance(value, types.Part):
        return value.text or ""
    if isinstance(value, list):
        return "\n\n".join(v if isinstance(v, str) else (v.text or "") for v in value
                           if isinstance(v, (str, types.Part)))
    return str(value)


def tool_schemas(request: LlmRequest) -> list[tuple[str, str, dict[str, Any]]]:
    """``(name, description, JSON Schema of the parameters)`` of every declared function."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    for tool in request.config.tools or []:
        if not isinstance(tool, types.Tool):
            raise ModelError("native.protocol.unsupported", f"tool {tool!r} is not declared")
        if any(v is not None for k, v in tool if k != "function_declarations"):
            raise ModelError("native.protocol.unsupported",
                             "only function tools work with this provider")
        for decl in tool.function_declarations or []:
            out.append((decl.name or "", decl.description or "", _parameters(decl)))
    return out


def _parameters(decl: types.FunctionDeclaration) -> dict[str, Any]:
    if isinstance(decl.parameters_json_schema, dict):
        return decl.parameters_json_schema
    if decl.parameters is not None:
        schema: dict[str, Any] = decl.parameters.json_schema.model_dump(mode="json",
                                                                        exclude_none=True)
        return schema
    return {"type": "object", "properties": {}}


def settings(request: LlmRequest) -> Settings:
    """The generation settings of ``request``."""
    config = request.config
    thinking = config.thinking_config
    return Settings(
        max_output_tokens=config.max_output_tokens, temperature=config.temperature,
        top_p=config.top_p, stop=list(config.stop_sequences) if config.stop_sequences else None,
        include_thoughts=bool(thinking and thinking.include_thoughts),
        thinking_budget=thinking.thinking_budget if thinking else None)


def result_text(response: dict[str, Any] | None) -> str:
    """A tool result as the text the model reads (see the module docstring)."""
    if response and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return json.dumps(response or {}, ensure_ascii=False, default=str)


def conversation(request: LlmRequest) -> list[Item]:
    """The request's contents as ``Item``s, in order (see the module docstring)."""
    items: list[Item] = []
    pending: defaultdict[str, deque[str]] = defaultdict(deque)
    for content in request.contents:
        role: Literal["user", "model"] = "model" if content.role == "model" else "user"
        for part in content.parts or []:
            if part.function_call is not None:
                call = part.function_call
                call_id = call.id or f"call_{len(items)}"
                pending[call.name or ""].append(call_id)
                items.append(Item(role=role, kind="call", call_id=call_id, name=call.name or "",
                                  args=dict(call.args or {})))
            elif part.function_response is not None:
                res = part.function_response
                queue = pending[res.name or ""]
                call_id = res.id or (queue.popleft() if queue else f"call_{len(items)}")
                items.append(Item(role=role, kind="result", call_id=call_id,
                                  name=res.name or "", text=result_text(res.response)))
            elif part.thought:
                items.append(Item(role=role, kind="thought", text=part.text or "",
                                  signature=part.thought_signature))
            elif part.text is not None:
                if part.text:
                    items.append(Item(role=role, kind="text", text=part.text))
            elif part.inline_data is not None and (part.inline_data.mime_type or "").startswith(
                    "image/"):
                items.append(Item(role=role, kind="image", mime_type=part.inline_data.mime_type
                                  or "", data=part.inline_data.data or b""))
            else:
                raise ModelError("native.protocol.unsupported",
                                 "the conversation holds a part this provider cannot carry")
    return items
