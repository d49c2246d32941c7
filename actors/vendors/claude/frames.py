"""Claude Code's stream-json wire, as msgspec Structs: what the CLI writes and what we write to it.

Only the fields corral reads are declared; unknown fields are ignored, and field types are kept
loose where the CLI has changed them between releases. CLI → host frames are decoded in two
steps: an envelope (``type`` only) says whether the frame is one we read at all, so a frame type
added by a newer CLI is skipped rather than treated as garbage; then the frame is decoded as its
Struct. Host → CLI frames are encoded from Structs so their bytes are stable (recorded tests
compare them byte for byte).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

# --- CLI → host ---------------------------------------------------------------------------


class Envelope(msgspec.Struct):
    """Just the ``type`` of a frame."""

    type: str = ""


class Block(msgspec.Struct, kw_only=True):
    """One Anthropic content block (text, thinking, tool_use, tool_result, or one we skip)."""

    type: str
    text: str | None = None
    thinking: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    tool_use_id: str | None = None
    content: Any = None
    is_error: bool | None = None


class ApiUsage(msgspec.Struct, kw_only=True):
    """The Messages API usage object (per turn in ``result``)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class ApiMessage(msgspec.Struct, kw_only=True):
    """A Messages API message inside ``assistant``/``user`` frames (content may be a bare string)."""

    id: str | None = None
    model: str | None = None
    content: str | list[Block] = []


class SystemFrame(msgspec.Struct, tag="system", tag_field="type", kw_only=True):
    """``system`` frames; only ``subtype: "init"`` (sent at the start of every turn) is read."""

    subtype: str = ""
    session_id: str | None = None
    model: str | None = None
    cwd: str | None = None
    tools: list[str] = []


class AssistantFrame(msgspec.Struct, tag="assistant", tag_field="type", kw_only=True):
    """A whole assistant content block (the CLI sends one frame per block), or a synthetic API error."""

    message: ApiMessage
    parent_tool_use_id: str | None = None
    error: str | None = None


class UserFrame(msgspec.Struct, tag="user", tag_field="type", kw_only=True):
    """Tool results, interruption notes, and replays of the user lines we sent (``isReplay``)."""

    message: ApiMessage
    parent_tool_use_id: str | None = None
    uuid: str | None = None
    isReplay: bool = False


class StreamDelta(msgspec.Struct, kw_only=True):
    """A ``content_block_delta`` payload (``message_delta``'s has no ``type``)."""

    type: str = ""
    text: str | None = None
    thinking: str | None = None


class StreamEvent(msgspec.Struct, kw_only=True):
    """A raw Messages API streaming event."""

    type: str
    index: int | None = None
    message: ApiMessage | None = None
    content_block: Block | None = None
    delta: StreamDelta | None = None


class StreamEventFrame(msgspec.Struct, tag="stream_event", tag_field="type", kw_only=True):
    """A partial-message event (``--include-partial-messages``)."""

    event: StreamEvent
    parent_tool_use_id: str | None = None


class ResultFrame(msgspec.Struct, tag="result", tag_field="type", kw_only=True):
    """The end of a turn. ``total_cost_usd`` is cumulative over the process."""

    subtype: str = "success"
    is_error: bool = False
    duration_ms: int | None = None
    result: str | None = None
    stop_reason: str | None = None
    session_id: str | None = None
    total_cost_usd: float | None = None
    usage: ApiUsage | None = None
    api_error_status: int | None = None
    errors: list[str] = []
    terminal_reason: str | None = None


class ControlRequestFrame(msgspec.Struct, tag="control_request", tag_field="type", kw_only=True):
    """A request from the CLI awaiting a ``control_response`` (``request`` decoded per subtype)."""

    request_id: str
    request: msgspec.Raw


class RequestSubtype(msgspec.Struct):
    """The ``subtype`` of a control request."""

    subtype: str = ""


class CanUseTool(msgspec.Struct, kw_only=True):
    """``can_use_tool``: may ``tool_name`` run with ``input``?"""

    tool_name: str
    input: Any = None
    permission_suggestions: list[Any] = []
    tool_use_id: str | None = None


class ResponseBody(msgspec.Struct, kw_only=True):
    """The inside of a ``control_response``."""

    subtype: str = "success"
    request_id: str | None = None
    error: str | None = None
    response: Any = None


class ControlResponseFrame(msgspec.Struct, tag="control_response", tag_field="type", kw_only=True):
    """The CLI's answer to one of our control requests (or, with replay on, an echo of ours)."""

    response: ResponseBody


class ControlCancelFrame(msgspec.Struct, tag="control_cancel_request", tag_field="type", kw_only=True):
    """The CLI withdrew one of its control requests (an interrupt cancels open permissions)."""

    request_id: str


class RateLimitInfo(msgspec.Struct, kw_only=True):
    """One rate-limit window as the CLI reports it."""

    status: str | None = None
    resetsAt: float | None = None
    rateLimitType: str | None = None
    utilization: float | None = None


class RateLimitFrame(msgspec.Struct, tag="rate_limit_event", tag_field="type", kw_only=True):
    """A rate-limit report."""

    rate_limit_info: RateLimitInfo


CliFrame = (
    SystemFrame | AssistantFrame | UserFrame | StreamEventFrame | ResultFrame
    | ControlRequestFrame | ControlResponseFrame | ControlCancelFrame | RateLimitFrame
)
KNOWN_TYPES = frozenset({
    "system", "assistant", "user", "stream_event", "result", "control_request",
    "control_response", "control_cancel_request", "rate_limit_event",
})

ENVELOPE = msgspec.json.Decoder(Envelope)
FRAME = msgspec.json.Decoder(CliFrame)
SUBTYPE = msgspec.json.Decoder(RequestSubtype)
CAN_USE_TOOL = msgspec.json.Decoder(CanUseTool)

# --- host → CLI ---------------------------------------------------------------------------


class UserContent(msgspec.Struct, kw_only=True):
    """The ``message`` of a user line."""

    role: Literal["user"] = "user"
    content: str


class UserLine(msgspec.Struct, kw_only=True):
    """A prompt: starts a turn when idle; queued by the CLI during a turn. ``uuid`` comes back in its replay."""

    type: Literal["user"] = "user"
    message: UserContent
    parent_tool_use_id: None = None
    session_id: str = ""
    uuid: str


class Initialize(msgspec.Struct, kw_only=True):
    """The handshake the official SDKs send first; its answer proves the CLI reads stream-json."""

    subtype: Literal["initialize"] = "initialize"
    hooks: None = None


class Interrupt(msgspec.Struct, kw_only=True):
    """Stop the running turn."""

    subtype: Literal["interrupt"] = "interrupt"


class SetModel(msgspec.Struct, kw_only=True):
    """Use ``model`` from the next request on."""

    subtype: Literal["set_model"] = "set_model"
    model: str


class ControlRequest(msgspec.Struct, kw_only=True):
    """A request of ours, answered by a ``control_response`` with the same ``request_id``."""

    type: Literal["control_request"] = "control_request"
    request_id: str
    request: Initialize | Interrupt | SetModel


class Allow(msgspec.Struct, kw_only=True):
    """A ``can_use_tool`` answer letting the tool run (``updatedPermissions`` only for allow_always)."""

    behavior: Literal["allow"] = "allow"
    updatedInput: Any
    updatedPermissions: list[Any] | msgspec.UnsetType = msgspec.UNSET


class Deny(msgspec.Struct, kw_only=True):
    """A ``can_use_tool`` answer refusing the tool; the model sees ``message`` as the tool's error."""

    behavior: Literal["deny"] = "deny"
    message: str


class Success(msgspec.Struct, kw_only=True):
    """A successful answer to a CLI control request."""

    subtype: Literal["success"] = "success"
    request_id: str
    response: Allow | Deny


class Failure(msgspec.Struct, kw_only=True):
    """A refusal of a CLI control request we cannot serve (so the CLI does not wait forever)."""

    subtype: Literal["error"] = "error"
    request_id: str
    error: str


class ControlResponse(msgspec.Struct, kw_only=True):
    """Our answer to a CLI control request."""

    type: Literal["control_response"] = "control_response"
    response: Success | Failure


_ENCODER = msgspec.json.Encoder()


def encode_line(message: msgspec.Struct) -> bytes:
    """One NDJSON line for the CLI's stdin."""
    return _ENCODER.encode(message) + b"\n"
