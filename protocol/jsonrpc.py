"""A sans-IO JSON-RPC 2.0 core shared by every JSON-RPC peer we talk to (LSP, ACP, MCP).

Framing is not here: bytes of one message in, bytes of one message out; the caller frames them
(``protocol.framing``: Content-Length for LSP, newline-delimited for ACP). A message is one of
four shapes, told apart by which members are present:

=================  ======  ========  =================
shape              ``id``  method    result / error
=================  ======  ========  =================
request            yes     yes       —
notification       —       yes       —
response           yes     —         ``result``
error response     yes*    —         ``error``
=================  ======  ========  =================

(*) ``null`` when the peer could not read the request it answers. ``UNSET`` tells a missing
``id`` (a notification) from ``"id": null``. ``params`` and ``result`` stay ``msgspec.Raw``
until the method is known; ``decode_as`` then decodes them against that method's type.

``Endpoint`` is one side of a connection: it numbers our requests, remembers which method each
pending id was for (so a response names its method), and classifies what the peer sends. Both
directions keep their own id space. A response to an id we never sent is the peer's fault
(``ProtocolError``); a response to an id we gave up on (``forget``) is dropped quietly. Batches
(JSON arrays) are refused: none of our peers send them.
"""

from __future__ import annotations

import collections
import itertools
from typing import Any, Final, TypeAlias, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from .errors import ProtocolError

__all__ = [
    "ErrorResponse",
    "Endpoint",
    "Incoming",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "RpcError",
    "decode",
    "decode_as",
]

RequestId: TypeAlias = int | str
"""A JSON-RPC id: we send integers; peers may send strings."""

T = TypeVar("T")

# Standard codes (JSON-RPC 2.0), and the LSP ones every peer of ours may meet.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
REQUEST_CANCELLED: Final = -32800
CONTENT_MODIFIED: Final = -32801
SERVER_CANCELLED: Final = -32802


class RpcError(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """The ``error`` member of an error response."""

    code: int
    message: str
    data: Any = None


class Request(msgspec.Struct, kw_only=True, frozen=True):
    """A call from the peer that needs exactly one response (``Endpoint.respond``)."""

    id: RequestId
    method: str
    params: msgspec.Raw


class Notification(msgspec.Struct, kw_only=True, frozen=True):
    """A one-way message from the peer."""

    method: str
    params: msgspec.Raw


class Response(msgspec.Struct, kw_only=True, frozen=True):
    """The result of one of our requests; ``method`` is the one we called (None if unknown)."""

    id: RequestId
    result: msgspec.Raw
    method: str | None = None


class ErrorResponse(msgspec.Struct, kw_only=True, frozen=True):
    """The failure of one of our requests (``id`` None: the peer could not read it)."""

    id: RequestId | None
    error: RpcError
    method: str | None = None


Incoming: TypeAlias = Request | Notification | Response | ErrorResponse
"""Whatever the peer may send."""


class _Envelope(msgspec.Struct, kw_only=True, frozen=True):
    jsonrpc: str | UnsetType = UNSET
    id: RequestId | None | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: msgspec.Raw = msgspec.Raw()
    result: msgspec.Raw = msgspec.Raw()
    error: RpcError | UnsetType = UNSET


class _Out(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """Every outgoing shape in one Struct: UNSET members are left out of the JSON."""

    jsonrpc: str | UnsetType = UNSET
    id: RequestId | None | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: Any | UnsetType = UNSET
    result: Any | UnsetType = UNSET
    error: RpcError | UnsetType = UNSET


_ENVELOPE = msgspec.json.Decoder(_Envelope)
_ENCODER = msgspec.json.Encoder()
_FORGOTTEN_KEPT = 1024  # ids given up on, remembered so that a late answer is dropped quietly


def decode(payload: bytes) -> Incoming:
    """Classify one message; ``ProtocolError`` unless it is a JSON object of a known shape.

    A response's ``method`` is None here (``Endpoint.receive`` fills it in).
    """
    try:
        env = _ENVELOPE.decode(payload)
    except (msgspec.DecodeError, RecursionError) as exc:  # Raw members still check their nesting
        raise ProtocolError(f"not a JSON-RPC message: {exc}") from None
    if env.jsonrpc is not UNSET and env.jsonrpc != "2.0":
        raise ProtocolError(f"unsupported JSON-RPC version {env.jsonrpc!r}")
    if env.method is not UNSET:
        if env.id is UNSET:
            return Notification(method=env.method, params=env.params)
        if env.id is None:
            raise ProtocolError(f"request {env.method!r} with a null id")
        return Request(id=env.id, method=env.method, params=env.params)
    if env.id is UNSET:
        raise ProtocolError("message with neither a method nor an id")
    if env.error is not UNSET:
        return ErrorResponse(id=env.id, error=env.error)
    if env.id is None or not len(env.result):
        raise ProtocolError("response with neither a result nor an error")
    return Response(id=env.id, result=env.result)


def decode_as(raw: msgspec.Raw, kind: type[T], what: str) -> T:
    """Decode ``params`` or ``result`` as ``kind`` (absent reads as ``null``).

    ``ProtocolError`` naming ``what`` and the path of the mismatch if it does not fit.
    """
    try:
        return msgspec.json.decode(raw if len(raw) else b"null", type=kind)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise ProtocolError(f"malformed {what}: {exc}") from None


class Endpoint:
    """One side of a JSON-RPC connection, sans IO: ``request``/``notify``/``respond`` give the
    bytes to send, ``receive`` classifies the bytes that came in.

    ``version`` is the ``"jsonrpc"`` member we send (None leaves it out, as Codex wants).
    """

    def __init__(self, *, version: str | None = "2.0") -> None:
        self._version: str | UnsetType = UNSET if version is None else version
        self._ids = itertools.count(1)
        self._pending: dict[RequestId, str] = {}
        self._forgotten: collections.OrderedDict[RequestId, None] = collections.OrderedDict()

    @property
    def pending(self) -> int:
        """How many of our requests await an answer."""
        return len(self._pending)

    def request(self, method: str, params: Any = UNSET) -> tuple[int, bytes]:
        """A new request: its id (to match the answer) and its bytes."""
        request_id = next(self._ids)
        self._pending[request_id] = method
        return request_id, self._encode(_Out(id=request_id, method=method, params=params))

    def notify(self, method: str, params: Any = UNSET) -> bytes:
        """A notification's bytes."""
        return self._encode(_Out(method=method, params=params))

    def respond(self, request_id: RequestId, result: Any) -> bytes:
        """The answer to the peer's request ``request_id`` (``None`` encodes as ``null``)."""
        return self._encode(_Out(id=request_id, result=result))

    def respond_error(self, request_id: RequestId | None, code: int, message: str,
                      data: Any = None) -> bytes:
        """An error answer to the peer's request (``request_id`` None if it was unreadable)."""
        return self._encode(_Out(id=request_id, error=RpcError(code=code, message=message, data=data)))

    def forget(self, request_id: RequestId) -> None:
        """Give up on one of our requests (timed out, cancelled): a late answer is dropped."""
        if self._pending.pop(request_id, None) is not None:
            self._forgotten[request_id] = None
            while len(self._forgotten) > _FORGOTTEN_KEPT:
                self._forgotten.popitem(last=False)

    def receive(self, payload: bytes) -> Incoming | None:
        """Classify one message from the peer; None for a late answer to a forgotten request.

        ``ProtocolError`` for garbage or for an answer to an id we never sent.
        """
        message = decode(payload)
        match message:
            case Response(id=rid) | ErrorResponse(id=rid) if rid is not None:
                method = self._pending.pop(rid, None)
                if method is None:
                    if rid in self._forgotten:
                        del self._forgotten[rid]
                        return None
                    raise ProtocolError(f"answer to an unknown request id {rid!r}")
                return msgspec.structs.replace(message, method=method)
        return message

    def _encode(self, message: _Out) -> bytes:
        if message.method is not UNSET and not message.method:
            raise ValueError("a JSON-RPC method name must not be empty")  # our bug, not the peer's
        return _ENCODER.encode(msgspec.structs.replace(message, jsonrpc=self._version))
