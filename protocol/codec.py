"""Encoders and decoders of the client protocol, built once, with typed decode failures.

``decode_request`` tells the three failures a server must answer differently: an unreadable
frame (``bad_request``, id null), a readable frame with a bad shape (``bad_request`` with its
id), and an unknown ``type`` (``unknown_method`` with its id). ``decode_hello`` tells the three
handshake failures apart: another first frame (``bad_handshake``), a missing, null or non-string
token (``unauthorized``; checking its value is the server's business), and another protocol
version (``unsupported_protocol``).

Every decode failure is a ``FrameError``, whatever its cause: malformed JSON or UTF-8, a wrong
type, a number out of range, or a value nested deeper than the decoder's recursion limit
(msgspec raises ``RecursionError`` for ~1,000 levels, even inside a field nobody reads).
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from .base import PROTOCOL_VERSION
from .errors import BadHandshake, BadRequest, CorralError, Unauthorized, UnknownMethod, UnsupportedProtocol
from .messages import REQUEST_TYPES, ClientRequest, Hello, ServerFrame

__all__ = [
    "FrameError",
    "decode_hello",
    "decode_request",
    "decode_server_frame",
    "encode",
    "peek_id",
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
    """Decode the handshake frame, raising ``FrameError`` (id null) that says which error to answer.

    The checks go in the order that tells an unauthenticated client the least: is it a hello,
    does it carry a string token, does it speak our version, is the rest well-formed. The
    token's value is left to the caller (it compares it in constant time).
    """
    try:
        envelope = _HELLO_ENVELOPE.decode(frame)
    except _UNDECODABLE as exc:
        raise FrameError(BadHandshake(f"the first frame must be hello: {_reason(exc)}"), None) from None
    if envelope.type != "hello":
        raise FrameError(BadHandshake("the first frame must be hello"), None)
    if not isinstance(envelope.token, str):
        raise FrameError(Unauthorized("wrong or missing token"), None)
    if not _is_int(envelope.protocol):
        raise FrameError(BadHandshake("hello needs an integer 'protocol'"), None)
    if envelope.protocol != PROTOCOL_VERSION:
        raise FrameError(UnsupportedProtocol(
            f"protocol {envelope.protocol} is not supported; this daemon speaks {PROTOCOL_VERSION}"), None)
    try:
        return _HELLO.decode(frame)
    except _UNDECODABLE as exc:
        raise FrameError(BadHandshake(f"malformed hello: {_reason(exc)}"), None) from None


def peek_id(frame: bytes | str) -> int | None:
    """The request id of a frame if one can be read, else ``None`` (never raises)."""
    try:
        envelope = _ENVELOPE.decode(frame)
    except _UNDECODABLE:
        return None
    return envelope.id if _is_int(envelope.id) else None


def decode_request(frame: bytes | str) -> ClientRequest:
    """Decode one request frame, raising ``FrameError`` that says which error to answer with."""
    try:
        envelope = _ENVELOPE.decode(frame)
    except _UNDECODABLE as exc:
        raise FrameError(BadRequest(f"frame is not a JSON object: {_reason(exc)}"), None) from None
    request_id = envelope.id if _is_int(envelope.id) else None
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
    except _UNDECODABLE as exc:
        raise FrameError(BadRequest(_reason(exc)), request_id) from None


def decode_server_frame(frame: bytes | str) -> ServerFrame:
    """Decode a frame from the daemon (for clients); raises ``msgspec.DecodeError`` on garbage."""
    try:
        return _server_decoder().decode(frame)
    except RecursionError:
        raise msgspec.DecodeError("frame nested too deeply") from None


class _Envelope(msgspec.Struct):
    type: Any = None
    id: Any = None


class _HelloEnvelope(msgspec.Struct):
    type: Any = None
    protocol: Any = None
    token: Any = None


# RecursionError: msgspec's guard against deep nesting (it recurses even to skip a field).
_UNDECODABLE = (msgspec.DecodeError, RecursionError)


def _reason(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_ENCODER = msgspec.json.Encoder()
_ENVELOPE = msgspec.json.Decoder(_Envelope)
_HELLO_ENVELOPE = msgspec.json.Decoder(_HelloEnvelope)
_HELLO = msgspec.json.Decoder(Hello)
_REQUEST = msgspec.json.Decoder(ClientRequest)


@functools.cache
def _server_decoder() -> msgspec.json.Decoder[ServerFrame]:
    """Built on a client's first frame: the daemon never decodes one, and building it resolves
    the annotations of every event and result type, a good part of the daemon's start."""
    return msgspec.json.Decoder(ServerFrame)
