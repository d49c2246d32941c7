"""Encoders and decoders of the client protocol, built once, with typed decode failures.

``decode_request`` tells the three failures a server must answer differently: an unreadable
frame (``bad_request``, id null), a readable frame with a bad shape (``bad_request`` with its
id), and an unknown ``type`` (``unknown_method`` with its id).
"""

from __future__ import annotations

from typing import Any

import msgspec

from .errors import BadRequest, CorralError, UnknownMethod
from .messages import REQUEST_TYPES, ClientRequest, Hello, ServerFrame

__all__ = [
    "FrameError",
    "decode_hello",
    "decode_request",
    "decode_server_frame",
    "encode",
]


class FrameError(Exception):
    """A client frame that cannot be served; ``error`` is the typed error, ``id`` the request's id if readable."""

    def __init__(self, error: CorralError, id: int | None) -> None:
        super().__init__(error.message)
        self.error = error
        self.id = id


def encode(message: msgspec.Struct) -> bytes:
    """Encode any wire Struct as one JSON document."""
    return _ENCODER.encode(message)


def decode_hello(frame: bytes | str) -> Hello:
    """Decode the handshake frame; raises ``FrameError`` with ``bad_handshake`` semantics left to the caller."""
    return _HELLO.decode(frame)


def decode_request(frame: bytes | str) -> ClientRequest:
    """Decode one request frame, raising ``FrameError`` that says which error to answer with."""
    try:
        envelope = _ENVELOPE.decode(frame)
    except msgspec.DecodeError as exc:
        raise FrameError(BadRequest(f"frame is not a JSON object: {exc}"), None) from None
    request_id = envelope.id if isinstance(envelope.id, int) and not isinstance(envelope.id, bool) else None
    if not isinstance(envelope.type, str):
        raise FrameError(BadRequest("frame has no string 'type'"), request_id)
    if envelope.type not in REQUEST_TYPES:
        if envelope.type == "hello":
            raise FrameError(BadRequest("the handshake is already done"), request_id)
        raise FrameError(UnknownMethod(f"unknown method {envelope.type!r}"), request_id)
    if request_id is None:
        raise FrameError(BadRequest("request has no integer 'id'"), None)
    try:
        return _REQUEST.decode(frame)
    except msgspec.DecodeError as exc:
        raise FrameError(BadRequest(str(exc)), request_id) from None


def decode_server_frame(frame: bytes | str) -> ServerFrame:
    """Decode a frame from the daemon (for clients); raises ``msgspec.DecodeError`` on garbage."""
    return _SERVER.decode(frame)


class _Envelope(msgspec.Struct):
    type: Any = None
    id: Any = None


_ENCODER = msgspec.json.Encoder()
_ENVELOPE = msgspec.json.Decoder(_Envelope)
_HELLO = msgspec.json.Decoder(Hello)
_REQUEST = msgspec.json.Decoder(ClientRequest)
_SERVER = msgspec.json.Decoder(ServerFrame)
