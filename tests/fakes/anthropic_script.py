"""The script of the fake Anthropic server: the replies a test queues, as msgspec Structs.

A script file for the standalone server is a JSON list of these, tagged by ``type``:
``{"type": "reply", "blocks": [{"type": "text", "text": "hi"}]}`` or
``{"type": "error", "status": 429}``.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = [
    "ERROR_TYPES",
    "Block",
    "ErrorReply",
    "Reply",
    "Scripted",
    "Text",
    "Thinking",
    "ToolUse",
    "bash",
    "load_script",
    "text",
]


class Text(msgspec.Struct, tag="text", kw_only=True, frozen=True):
    """A text block, streamed in ``chunk``-character ``text_delta`` pieces."""

    text: str
    chunk: int = 8


class Thinking(msgspec.Struct, tag="thinking", kw_only=True, frozen=True):
    """A thinking block: ``thinking_delta`` pieces, then one ``signature_delta``."""

    text: str
    chunk: int = 16
    signature: str = "c2lnbmF0dXJl"


class ToolUse(msgspec.Struct, tag="tool_use", kw_only=True, frozen=True):
    """A tool call whose ``input`` is streamed as ``input_json_delta`` fragments."""

    name: str
    input: dict[str, Any]
    id: str | None = None
    chunk: int = 12


Block = Text | Thinking | ToolUse


class Reply(msgspec.Struct, tag="reply", kw_only=True, frozen=True):
    """One successful model answer; ``stop_reason`` defaults to ``tool_use`` when a block calls a tool."""

    blocks: list[Block]
    stop_reason: str | None = None
    input_tokens: int = 25
    output_tokens: int = 7
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    delay: float = 0.0
    hang: bool = False


class ErrorReply(msgspec.Struct, tag="error", kw_only=True, frozen=True):
    """An HTTP error with the API's body ``{"type":"error","error":{"type","message"}}``.

    Unless ``retry`` is set it carries ``x-should-retry: false``, which stops the client's
    retries for most statuses (Claude Code 2.1.197 still retries a 529: give the child
    ``CLAUDE_CODE_MAX_RETRIES=0`` for a one-shot 529).
    """

    status: int
    error_type: str | None = None
    message: str | None = None
    headers: dict[str, str] = {}
    retry: bool = False


Scripted = Reply | ErrorReply


def text(value: str, **kw: Any) -> Reply:
    """A reply holding one text block."""
    return Reply(blocks=[Text(text=value)], **kw)


def bash(command: str, description: str = "run a command", **kw: Any) -> Reply:
    """A reply calling the ``Bash`` tool with ``command``."""
    return Reply(blocks=[ToolUse(name="Bash", input={"command": command, "description": description})], **kw)


ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 529: "overloaded_error",
}
_SCRIPT = msgspec.json.Decoder(list[Scripted])


def load_script(raw: bytes) -> list[Scripted]:
    """Decode a JSON list of replies (``{"type": "reply" | "error", ...}``)."""
    return _SCRIPT.decode(raw)
