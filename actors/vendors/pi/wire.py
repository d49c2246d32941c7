"""pi's RPC mode on the wire: the frames we read (Structs) and the commands we write (bytes).

pi (``pi --mode rpc``) writes one JSON object per LF-terminated line: command responses
(``{"type": "response", "id", "command", "success", "data"|"error"}``), agent events
(``agent_start`` … ``agent_end``) and extension UI requests. Only the fields corral reads are
declared: msgspec skips the rest, which matters because every ``message_update`` repeats the
whole partial message. A frame whose ``type`` is not listed decodes to ``None`` (ignored); a line
that is not a JSON object raises ``ProtocolError``.

Commands are ``{"type": NAME, "id"?, …}`` lines (``command``); pi echoes ``id`` in its response.
"""

from __future__ import annotations

from typing import Any

import msgspec

from protocol.errors import ProtocolError

__all__ = [
    "AgentEnd", "AgentMessage", "AgentStart", "AutoRetryEnd", "AutoRetryStart", "Content",
    "ExtensionError", "ExtensionUiRequest", "Frame", "MessageEnd", "MessageStart", "MessageUpdate",
    "ModelInfo", "Response", "State", "ToolExecutionEnd", "ToolExecutionStart",
    "ToolExecutionUpdate", "ToolResult", "Usage", "command", "decode", "decode_data",
]


class _Base(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """pi's objects are camelCase; unknown fields are ignored."""


class _Event(_Base, tag_field="type", kw_only=True, frozen=True, rename="camel"):
    """A tagged stdout frame."""


class Cost(_Base, kw_only=True, frozen=True):
    total: float = 0.0


class Usage(_Base, kw_only=True, frozen=True):
    """An assistant message's token usage and cost (USD)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: Cost = Cost()


class Content(_Base, kw_only=True, frozen=True):
    """One block of a message: ``text``, ``thinking``, ``toolCall`` or ``image``."""

    type: str
    text: str | None = None
    thinking: str | None = None


class AgentMessage(_Base, kw_only=True, frozen=True):
    """A conversation message (``user``, ``assistant``, ``toolResult``, …)."""

    role: str
    content: list[Content] | str = []
    usage: Usage | None = None
    stop_reason: str | None = None
    error_message: str | None = None
    provider: str | None = None
    model: str | None = None


class ToolResult(_Base, kw_only=True, frozen=True):
    content: list[Content] = []


class AssistantEvent(_Base, kw_only=True, frozen=True):
    """The streaming delta of a ``message_update``."""

    type: str
    content_index: int = 0
    delta: str = ""


class Response(_Event, tag="response", kw_only=True, frozen=True):
    id: str | None = None
    command: str = ""
    success: bool = False
    error: str | None = None
    data: msgspec.Raw = msgspec.Raw(b"null")


class AgentStart(_Event, tag="agent_start", kw_only=True, frozen=True):
    pass


class AgentEnd(_Event, tag="agent_end", kw_only=True, frozen=True):
    messages: list[AgentMessage] = []


class MessageStart(_Event, tag="message_start", kw_only=True, frozen=True):
    message: AgentMessage


class MessageUpdate(_Event, tag="message_update", kw_only=True, frozen=True):
    assistant_message_event: AssistantEvent


class MessageEnd(_Event, tag="message_end", kw_only=True, frozen=True):
    message: AgentMessage


class ToolExecutionStart(_Event, tag="tool_execution_start", kw_only=True, frozen=True):
    tool_call_id: str
    tool_name: str
    args: Any = None


class ToolExecutionUpdate(_Event, tag="tool_execution_update", kw_only=True, frozen=True):
    tool_call_id: str
    tool_name: str
    partial_result: ToolResult | None = None


class ToolExecutionEnd(_Event, tag="tool_execution_end", kw_only=True, frozen=True):
    tool_call_id: str
    tool_name: str
    result: ToolResult | None = None
    is_error: bool = False


class ExtensionUiRequest(_Event, tag="extension_ui_request", kw_only=True, frozen=True):
    """An extension asks the client (dialogs: select/confirm/input/editor; the rest are notices)."""

    id: str
    method: str
    title: str | None = None
    message: str | None = None


class AutoRetryStart(_Event, tag="auto_retry_start", kw_only=True, frozen=True):
    attempt: int = 0
    error_message: str = ""


class AutoRetryEnd(_Event, tag="auto_retry_end", kw_only=True, frozen=True):
    success: bool = False
    final_error: str | None = None


class ExtensionError(_Event, tag="extension_error", kw_only=True, frozen=True):
    extension_path: str = ""
    event: str = ""
    error: str = ""


Frame = (Response | AgentStart | AgentEnd | MessageStart | MessageUpdate | MessageEnd
         | ToolExecutionStart | ToolExecutionUpdate | ToolExecutionEnd | ExtensionUiRequest
         | AutoRetryStart | AutoRetryEnd | ExtensionError)
"""Every frame kind the translator acts on."""


class ModelInfo(_Base, kw_only=True, frozen=True):
    id: str
    provider: str


class State(_Base, kw_only=True, frozen=True):
    """``get_state``'s data (the fields corral reads)."""

    model: ModelInfo | None = None
    is_streaming: bool = False
    pending_message_count: int = 0
    session_file: str | None = None
    session_id: str | None = None


class Models(_Base, kw_only=True, frozen=True):
    """``get_available_models``'s data."""

    models: list[ModelInfo] = []


_FRAME = msgspec.json.Decoder(Frame)
_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ENCODER = msgspec.json.Encoder()


def decode(line: bytes) -> Frame | None:
    """One stdout line as a ``Frame``; ``None`` for a well-formed frame of a kind we ignore."""
    try:
        return _FRAME.decode(line)
    except msgspec.DecodeError as exc:
        try:
            envelope = _OBJECT.decode(line)
        except msgspec.DecodeError:
            raise ProtocolError(f"pi wrote a line that is not a JSON object: {exc}") from None
        if "type" not in envelope:
            raise ProtocolError("pi wrote an object with no type") from None
        kind = msgspec.json.decode(envelope["type"])
        if kind in _KNOWN:
            raise ProtocolError(f"pi wrote a malformed {kind!r} frame: {exc}") from None
        return None


def decode_data(data: msgspec.Raw | None, kind: type[Any], what: str) -> Any:
    """A response's ``data`` as ``kind``; ``ProtocolError`` naming ``what`` if it does not fit."""
    try:
        return msgspec.json.decode(data if data is not None else b"null", type=kind)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"pi answered {what} with unexpected data: {exc}") from None


def command(kind: str, **fields: Any) -> bytes:
    """One command line (``{"type": kind, …}`` + LF); ``None`` fields are left out."""
    body = {"type": kind, **{k: v for k, v in fields.items() if v is not None}}
    return _ENCODER.encode(body) + b"\n"


_KNOWN = frozenset(cls.__struct_config__.tag for cls in Frame.__args__)
