"""The JSON-RPC envelope of ``codex app-server``: one JSON object per line, no ``"jsonrpc"`` member.

Codex speaks JSON-RPC 2.0 semantics without the version member (checked against 0.171.0: none of
its frames carry ``"jsonrpc"``, and it accepts ours without it). A frame is one of four shapes,
told apart by which members are present:

=================  ======  ========  =================
shape              ``id``  method    result / error
=================  ======  ========  =================
request            yes     yes       —
notification       —       yes       —
response           yes     —         ``result``
error response     yes     —         ``error``
=================  ======  ========  =================

``UNSET`` tells a missing ``id`` (a notification) from ``"id": null``. ``params`` and ``result``
stay ``msgspec.Raw`` until the method is known, then decode against that method's type. Both
directions keep their own id space: Codex numbers its server→client requests from 0.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from protocol.errors import ProtocolError

RequestId = int | str
"""A JSON-RPC id as Codex sends it (integers in practice; strings allowed)."""

T = TypeVar("T")


class RpcError(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """The ``error`` member of an error response."""

    code: int
    message: str
    data: Any = None


class Frame(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """Any frame, decoded lazily: the members present say which shape it is."""

    id: RequestId | None | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: msgspec.Raw = msgspec.Raw()
    result: msgspec.Raw = msgspec.Raw()
    error: RpcError | UnsetType = UNSET

    @property
    def is_request(self) -> bool:
        """A call from the peer that needs exactly one response."""
        return self.method is not UNSET and self.id is not UNSET and self.id is not None

    @property
    def is_notification(self) -> bool:
        """A one-way message from the peer."""
        return self.method is not UNSET and self.id is UNSET

    @property
    def is_response(self) -> bool:
        """The answer (result or error) to one of our requests."""
        return self.method is UNSET and self.id is not UNSET and (
            len(self.result) > 0 or self.error is not UNSET)


class _Request(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    method: str
    id: RequestId
    params: Any = None


class _Notification(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    method: str
    params: Any = None


class _Result(msgspec.Struct, kw_only=True, frozen=True):
    id: RequestId
    result: Any


class _ErrorResponse(msgspec.Struct, kw_only=True, frozen=True):
    id: RequestId
    error: RpcError


METHOD_NOT_FOUND = -32601
"""The JSON-RPC code we answer server requests with when we do not serve the method."""

_ENCODER = msgspec.json.Encoder()
_FRAME = msgspec.json.Decoder(Frame)


def decode_frame(line: bytes) -> Frame:
    """Parse one line; raises ``ProtocolError`` unless it is a JSON object of a known shape."""
    try:
        frame = _FRAME.decode(line)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"codex sent a frame that is not JSON-RPC: {exc}") from None
    if not (frame.is_request or frame.is_notification or frame.is_response):
        raise ProtocolError("codex sent a JSON object that is no request, notification or response")
    return frame


def decode_as(raw: msgspec.Raw, kind: type[T], what: str) -> T:
    """Decode ``params``/``result`` as the method's type; ``ProtocolError`` if it does not fit."""
    try:
        return msgspec.json.decode(raw if len(raw) else b"null", type=kind)
    except msgspec.DecodeError as exc:
        raise ProtocolError(f"codex sent a malformed {what}: {exc}") from None


def request(method: str, request_id: int, params: Any = None) -> bytes:
    """One request line (newline included)."""
    return _ENCODER.encode(_Request(method=method, id=request_id, params=params)) + b"\n"


def notification(method: str, params: Any = None) -> bytes:
    """One notification line (newline included)."""
    return _ENCODER.encode(_Notification(method=method, params=params)) + b"\n"


def response(request_id: RequestId, result: Any) -> bytes:
    """The result line for a server→client request."""
    return _ENCODER.encode(_Result(id=request_id, result=result)) + b"\n"


def error_response(request_id: RequestId, code: int, message: str) -> bytes:
    """The error line for a server→client request we cannot serve."""
    error = RpcError(code=code, message=message)
    return _ENCODER.encode(_ErrorResponse(id=request_id, error=error)) + b"\n"
