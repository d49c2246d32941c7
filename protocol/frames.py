"""The client protocol's frames other than requests: the handshake, responses and pushes.

``hello``/``welcome`` open a connection; ``ok``/``error`` answer a request by its id;
``event``/``lagged`` are pushed to a subscriber. The unions of every frame each side sends
(``ClientFrame``, ``ServerFrame``) and of the whole protocol (``AnyFrame``) close the module.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .base import PROTOCOL_VERSION, Message
from .events import Event
from .models import ClientInfo, DaemonInfo
from .requests import ClientRequest

# --- handshake -------------------------------------------------------------------------------


class Hello(Message, tag="hello", kw_only=True, frozen=True):
    """The first client frame: the token and the protocol version the client speaks."""

    protocol: int
    token: str
    client: ClientInfo = ClientInfo()


class Welcome(Message, tag="welcome", kw_only=True, frozen=True):
    """The daemon accepted the handshake."""

    protocol: int = PROTOCOL_VERSION
    connection_id: str
    daemon: DaemonInfo


# --- responses and pushes --------------------------------------------------------------------


class Ok(Message, tag="ok", kw_only=True, frozen=True):
    """The successful response to request ``id``."""

    id: int
    result: Any = msgspec.field(default_factory=dict)


class ErrorFrame(Message, tag="error", kw_only=True, frozen=True, omit_defaults=True):
    """The failed response to request ``id`` (null when the request was unreadable or pre-handshake).

    ``data`` (structured details) is left out when there are none.
    """

    id: int | None
    code: str
    message: str
    data: dict[str, Any] | None = None


class EventFrame(Message, tag="event", kw_only=True, frozen=True):
    """A session event, numbered by a gapless per-session ``seq``."""

    session_id: str
    seq: int
    ts: str
    event: Event


class Lagged(Message, tag="lagged", kw_only=True, frozen=True):
    """The connection fell behind; it was unsubscribed after the event numbered ``last_seq``."""

    session_id: str
    last_seq: int


ServerFrame = Welcome | Ok | ErrorFrame | EventFrame | Lagged
"""Every frame the daemon sends."""

ClientFrame = Hello | ClientRequest
"""Every frame a client sends."""

AnyFrame = Hello | ClientRequest | Welcome | Ok | ErrorFrame | EventFrame | Lagged
"""The whole client protocol in one union (the JSON Schema's root)."""
