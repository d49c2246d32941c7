"""The native fork server's wire: the daemon asks a pre-imported template for a session worker.

The template (``python -m actors.native.forkserver ADDRESS``) prints one ``ForkServerReady``
line (JSON) on its stdout once it serves. Then, on its Unix stream socket, one request per
connection: the daemon sends one ``ForkRequest`` as a JSON line of at most ``MAX_REQUEST``
bytes, and with its first bytes, as ``SCM_RIGHTS`` ancillary data, exactly three descriptors:
the worker's stdin (a pipe's read end), stdout and stderr (write ends). The server answers one
``ForkReply`` line (``pid``, or ``error`` saying why not) and closes the connection.

``env`` is the worker's whole environment (it holds secrets: never log it); ``death_signal`` is
the name of the signal the worker asks for when the daemon dies (``PR_SET_PDEATHSIG``), or
``None``.
"""

from __future__ import annotations

import msgspec

from .base import Data

__all__ = [
    "MAX_REPLY",
    "MAX_REQUEST",
    "ForkReply",
    "ForkRequest",
    "ForkServerReady",
    "decode_ready",
    "decode_reply",
    "decode_request",
    "encode_line",
]

MAX_REQUEST = 1 << 20
"""The longest request line, newline included (an environment is rarely over a few KiB)."""

MAX_REPLY = 4096
"""The longest reply line, newline included."""


class ForkServerReady(Data, kw_only=True, frozen=True):
    """The template's one stdout line: it has imported everything and listens on ``address``;
    ``warmed``: the provider kinds whose warm-up turn went well."""

    pid: int
    address: str
    warmed: list[str] = []


class ForkRequest(Data, kw_only=True, frozen=True):
    """Fork one worker with exactly this environment, in this directory."""

    env: dict[str, str]
    cwd: str
    death_signal: str | None = None


class ForkReply(Data, kw_only=True, frozen=True):
    """The new worker's pid (its own process group, re-parented to the requester), or why not."""

    pid: int | None = None
    error: str | None = None


def encode_line(message: ForkServerReady | ForkRequest | ForkReply) -> bytes:
    """One message as a JSON line (newline included)."""
    return _ENCODER.encode(message) + b"\n"


def decode_ready(line: bytes) -> ForkServerReady:
    """The ready line; raises ``msgspec.DecodeError`` (a ``ValidationError`` for a bad shape)."""
    return _READY.decode(line)


def decode_request(line: bytes) -> ForkRequest:
    """One request line; raises ``msgspec.DecodeError``."""
    return _REQUEST.decode(line)


def decode_reply(line: bytes) -> ForkReply:
    """One reply line; raises ``msgspec.DecodeError``."""
    return _REPLY.decode(line)


_ENCODER = msgspec.json.Encoder()
_READY = msgspec.json.Decoder(ForkServerReady)
_REQUEST = msgspec.json.Decoder(ForkRequest)
_REPLY = msgspec.json.Decoder(ForkReply)
