"""The OpenCode session's virtual wire: HTTP calls out, SSE events and HTTP answers in.

An OpenCode session has no process of its own: it talks to a shared ``opencode serve`` over HTTP
and reads the server's event stream. To keep the translator sans-IO like every other, the
transport (``transport.ServerChild``) carries both directions as JSON lines:

* out (translator → transport): ``Call {id, method, path, body}``; the transport performs it;
* in (transport → translator): every SSE event of the session as OpenCode sent it
  (``{"type": "session.status", "properties": {...}}``) and, for each call, ``Answer {type:
  "corral.answer", id, status, body}`` (``status`` 0 and ``error`` when no HTTP answer came).

Only the fields corral reads are declared; msgspec skips the rest of OpenCode's large objects.

``coalesce`` joins a run of text deltas of one part that queued up before the session read them
(OpenCode sends a delta per streamed chunk, and a fast model or a busy daemon leaves dozens
waiting): one frame instead of one per chunk, so one ``assistant`` event, one log line and one
client message, not dozens. Only consecutive deltas of the same session, message, part and
field are joined, so nothing moves past anything else.
"""

from __future__ import annotations

from typing import Any

import msgspec

from protocol.errors import ProtocolError

__all__ = ["ANSWER", "Answer", "Call", "Envelope", "ErrorInfo", "MessageInfo", "Part",
           "PermissionAsked", "coalesce", "decode", "decode_as", "encode_call"]

ANSWER = "corral.answer"
DELTA = "message.part.delta"
COALESCE_LIMIT = 64 * 1024
"""The most delta text ``coalesce`` joins into one frame (characters)."""


class _Base(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """OpenCode's objects are camelCase (ids end in ``ID``: declared by name)."""


class Call(msgspec.Struct, kw_only=True, frozen=True):
    """One HTTP call the translator asks for (``path`` includes the query)."""

    id: int
    method: str
    path: str
    body: Any = None


class Answer(msgspec.Struct, kw_only=True, frozen=True):
    """The transport's answer to ``Call`` ``id``: HTTP status and JSON body (raw)."""

    type: str = ANSWER
    id: int
    status: int
    body: msgspec.Raw = msgspec.Raw(b"null")
    error: str | None = None


class Envelope(msgspec.Struct, kw_only=True, frozen=True):
    """One inbound line: an SSE event (``type``, ``properties``) or an ``Answer``."""

    type: str
    properties: msgspec.Raw = msgspec.Raw(b"{}")
    id: Any = None
    status: int = 0
    body: msgspec.Raw = msgspec.Raw(b"null")
    error: str | None = None


class ErrorInfo(_Base, kw_only=True, frozen=True):
    name: str = "UnknownError"
    data: dict[str, Any] = {}

    @property
    def message(self) -> str:
        text = self.data.get("message")
        return text if isinstance(text, str) else self.name


class Tokens(_Base, kw_only=True, frozen=True):
    input: int = 0
    output: int = 0
    reasoning: int = 0
    cache: dict[str, int] = {}


class MessageInfo(_Base, kw_only=True, frozen=True):
    id: str
    role: str
    error: ErrorInfo | None = None


class ToolState(_Base, kw_only=True, frozen=True):
    status: str = "pending"
    input: Any = None
    output: Any = None
    error: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = {}


class Part(_Base, kw_only=True, frozen=True):
    """A message part: ``text``, ``reasoning``, ``tool``, ``step-finish``, …"""

    id: str
    message_id: str = msgspec.field(default="", name="messageID")
    type: str
    text: str | None = None
    tool: str | None = None
    call_id: str | None = msgspec.field(default=None, name="callID")
    state: ToolState | None = None
    tokens: Tokens | None = None
    cost: float = 0.0
    time: dict[str, Any] = {}


class PermissionAsked(_Base, kw_only=True, frozen=True):
    id: str
    permission: str = "unknown"
    patterns: list[str] = []
    metadata: dict[str, Any] = {}


_ENVELOPE = msgspec.json.Decoder(Envelope)
_ENCODER = msgspec.json.Encoder()


def decode(line: bytes) -> Envelope:
    """One inbound line; ``ProtocolError`` if it is not an object with a ``type``."""
    try:
        return _ENVELOPE.decode(line)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"opencode sent a malformed event: {exc}") from None


def decode_as(raw: msgspec.Raw, kind: type[Any], what: str) -> Any:
    """``raw`` as ``kind``; ``ProtocolError`` naming ``what`` if it does not fit."""
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"opencode sent a malformed {what}: {exc}") from None


def encode_call(call: Call) -> bytes:
    """A ``Call`` as one line."""
    return _ENCODER.encode(call) + b"\n"


def encode_answer(answer: Answer) -> bytes:
    """An ``Answer`` as one line (the transport's side)."""
    return _ENCODER.encode(answer)


def coalesce(frames: list[bytes]) -> list[bytes]:
    """``frames`` in order, each run of consecutive ``message.part.delta`` events of one session,
    message, part and field joined into one (its text up to ``COALESCE_LIMIT`` characters). Frames
    that are not such deltas (or do not decode) pass through untouched; so does a run of one."""
    out: list[bytes] = []
    run: list[tuple[bytes, _Delta]] = []
    size = 0
    for frame in frames:
        delta = _as_delta(frame)
        if run and (delta is None or delta.properties.key != run[0][1].properties.key
                    or size + len(delta.properties.delta) > COALESCE_LIMIT):
            out.append(_joined(run))
            run, size = [], 0
        if delta is None:
            out.append(frame)
        else:
            run.append((frame, delta))
            size += len(delta.properties.delta)
    if run:
        out.append(_joined(run))
    return out


class _DeltaProps(msgspec.Struct, kw_only=True, frozen=True):
    sessionID: str | None = None  # noqa: N815 - OpenCode's names
    messageID: str | None = None  # noqa: N815
    partID: str | None = None  # noqa: N815
    field: str = "text"
    delta: str

    @property
    def key(self) -> tuple[str | None, str | None, str | None, str]:
        return self.sessionID, self.messageID, self.partID, self.field


class _Delta(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    type: str
    properties: _DeltaProps
    id: str | None = None


_DELTA = msgspec.json.Decoder(_Delta)
_DELTA_MARK = f'"{DELTA}"'.encode()


def _as_delta(frame: bytes) -> _Delta | None:
    if _DELTA_MARK not in frame:
        return None
    try:
        event = _DELTA.decode(frame)
    except msgspec.DecodeError:
        return None
    return event if event.type == DELTA else None


def _joined(run: list[tuple[bytes, _Delta]]) -> bytes:
    if len(run) == 1:
        return run[0][0]
    first = run[0][1]
    text = "".join(delta.properties.delta for _, delta in run)
    return _ENCODER.encode(msgspec.structs.replace(
        first, properties=msgspec.structs.replace(first.properties, delta=text)))
