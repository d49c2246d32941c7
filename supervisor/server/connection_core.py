"""The sans-IO core of one client connection: frames in, frames out, subscriptions in between.

It does no I/O and reads no clock. Its shell (``connection.py``) hands it what the client sent
(``receive_hello``, ``receive_request``), what requests came to (``answer``, ``fail``,
``subscribe``, ``unsubscribe``) and the events it read from a session's feed for a
subscription (``offer``), and takes the frames to write with ``next_frame``. ``on_change`` is
called after every change that may wake the shell (something to write, room for events, a
subscription moved on, the connection must close).

The rules it keeps (PROTOCOL.md, "Details clients rely on"):

* The first frame must be a good ``hello`` with the token: ``welcome``, else one ``error`` with
  id null and the connection closes (``closing`` says how). Nothing else is served before.
  A connection the browser UI's cookie authenticated (``by_cookie``) needs a well-formed
  ``hello`` but not the token; ``token_given`` tells whether the token came anyway.
* Every request gets exactly one ``ok`` or ``error``; a frame that cannot be decoded for any
  reason, binary frames included, is ``bad_request`` and the connection stays open.
* The ``ok`` of ``session.subscribe`` is queued before any event of that subscription.
* Replay (the events up to the feed's end when the shell first read it) waits for room
  (``Offer.FULL``); a live event that does not fit lags the subscription: its queued events
  make way for one ``lagged`` whose ``last_seq`` is the last event of that session actually
  written, and the subscription ends. An ended subscription (lagged, unsubscribed, replaced by
  a new subscribe) takes no more events (``Offer.ENDED``), so after ``lagged`` nothing of that
  session is sent until the client subscribes again.
* Responses and errors are never dropped; past the queue's hard limit the client is not
  reading at all and the connection closes (``closing``).

States: ``HANDSHAKE`` → ``OPEN`` (welcome sent) or ``CLOSING`` (refused); ``OPEN`` → ``CLOSING``
(the client stopped reading). Calling a method in the wrong state raises ``LocalProtocolError``.
"""

from __future__ import annotations

import enum
import hmac
from collections.abc import Callable

import msgspec

from protocol.codec import FrameError, decode_hello, decode_request, encode, peek_id
from protocol.errors import BadHandshake, BadRequest, CorralError, Unauthorized
from protocol.messages import (
    ClientRequest,
    ErrorFrame,
    Lagged,
    Ok,
    SubscribeResult,
    Welcome,
)
from protocol.models import ClientInfo, DaemonInfo

from supervisor.server.outqueue import OutQueue, QueueOverflow

__all__ = ["Closing", "ConnectionCore", "LocalProtocolError", "Offer", "Phase", "Subscription"]

_POLICY_VIOLATION = 1008


class Phase(enum.Enum):
    """Where the connection is in its life (see the module docstring)."""

    HANDSHAKE = "handshake"
    OPEN = "open"
    CLOSING = "closing"


class Offer(enum.Enum):
    """What became of an event offered to a subscription."""

    QUEUED = "queued"  # queued: offer the next one
    FULL = "full"  # replaying and no room: offer it again once ``has_room()``
    LAGGED = "lagged"  # live and no room: the subscription ended with a ``lagged``
    ENDED = "ended"  # the subscription had ended already: stop offering


class LocalProtocolError(Exception):
    """The shell called the core in a state that does not allow it (a bug of ours)."""


class Closing(msgspec.Struct, frozen=True):
    """Why and how the connection closes: a websocket close code and reason."""

    code: int
    reason: str


class Subscription:
    """One session followed on this connection; ``cursor`` is the next seq to offer."""

    __slots__ = ("cursor", "ended", "live", "session_id")

    def __init__(self, session_id: str, cursor: int) -> None:
        self.session_id = session_id
        self.cursor = cursor
        self.live = False
        self.ended = False

    def __repr__(self) -> str:
        return f"<Subscription {self.session_id} cursor={self.cursor} live={self.live} ended={self.ended}>"


class ConnectionCore:
    """One client's protocol state; see the module docstring for the rules it keeps."""

    def __init__(self, connection_id: str, *, token: str, info: DaemonInfo, queue_size: int,
                 hard_limit: int | None = None, on_change: Callable[[], None] = lambda: None,
                 by_cookie: bool = False) -> None:
        self.id = connection_id
        self.by_cookie = by_cookie
        self.token_given = False
        self.client: ClientInfo | None = None
        """What the client's ``hello`` said it is (set once the handshake is accepted)."""
        self.phase = Phase.HANDSHAKE
        self.closing: Closing | None = None
        self._token = token.encode()
        self._info = info
        self._queue = OutQueue(queue_size, hard_limit)
        self._subscriptions: dict[str, Subscription] = {}
        self._last_written: dict[str, int] = {}
        self.last_event: tuple[str, int] | None = None
        """The session and seq of the event frame ``next_frame`` returned last (``None``: the
        frame was no event)."""
        self._on_change = on_change

    # --- frames in --------------------------------------------------------------------------

    def receive_hello(self, frame: str | bytes) -> bool:
        """Take the first frame: queue ``welcome`` and return True, or refuse the connection."""
        self._require(Phase.HANDSHAKE)
        try:
            if isinstance(frame, bytes):
                raise FrameError(BadHandshake("hello must be a JSON text frame"), None)
            hello = decode_hello(frame)
            self.token_given = hmac.compare_digest(hello.token.encode(), self._token)
            if not (self.token_given or self.by_cookie):
                raise FrameError(Unauthorized("wrong or missing token"), None)
        except FrameError as exc:
            self.refuse(exc.error)
            return False
        self.phase = Phase.OPEN
        self.client = hello.client
        self._control(Welcome(connection_id=self.id, daemon=self._info))
        return True

    def refuse(self, error: CorralError) -> None:
        """Refuse the handshake (a bad first frame, or none in time): one error, then close."""
        self._require(Phase.HANDSHAKE)
        self._control(ErrorFrame(id=None, code=error.code.value, message=error.message))
        self._close(error.code.value)

    def receive_request(self, frame: str | bytes) -> ClientRequest | None:
        """The request in ``frame``, or ``None`` when it was answered with an error already."""
        self._require(Phase.OPEN)
        try:
            if isinstance(frame, bytes):
                raise FrameError(BadRequest("binary frames are not served: send JSON text frames"),
                                 peek_id(frame))
            return decode_request(frame)
        except FrameError as exc:
            self.fail(exc.id, exc.error)
            return None

    # --- answers ----------------------------------------------------------------------------

    def answer(self, request_id: int, result: msgspec.Struct | dict[str, object]) -> None:
        """Queue the ``ok`` of a request."""
        self._control(Ok(id=request_id, result=result))

    def fail(self, request_id: int | None, error: CorralError) -> None:
        """Queue the ``error`` of a request (id null when it was unreadable)."""
        self._control(ErrorFrame(id=request_id, code=error.code.value, message=error.message,
                                 data=error.data))

    def subscribe(self, request_id: int, session_id: str, *, from_seq: int, last_seq: int) -> Subscription:
        """Answer a subscribe (``last_seq``: the feed's newest seq now) and start a subscription
        from ``from_seq`` (0 or 1: everything); any earlier one of the session ends."""
        self._end(session_id)
        start = max(from_seq, 1)
        self._last_written[session_id] = start - 1
        self.answer(request_id, SubscribeResult(last_seq=last_seq))
        subscription = self._subscriptions[session_id] = Subscription(session_id, start)
        return subscription

    def unsubscribe(self, request_id: int, session_id: str) -> None:
        """End the session's subscription (if any): its queued events and ``lagged`` go too."""
        self._end(session_id)
        self.answer(request_id, {})

    # --- events -----------------------------------------------------------------------------

    def offer(self, subscription: Subscription, frame: bytes) -> Offer:
        """Offer the event numbered ``subscription.cursor`` (see ``Offer``)."""
        if subscription.ended or self.phase is not Phase.OPEN:
            return Offer.ENDED
        sid = subscription.session_id
        if not self._queue.put_event(sid, subscription.cursor, frame):
            if not subscription.live:
                return Offer.FULL
            subscription.ended = True
            del self._subscriptions[sid]
            self._queue.put_lagged(sid)
            self._on_change()
            return Offer.LAGGED
        subscription.cursor += 1
        self._on_change()
        return Offer.QUEUED

    def replayed(self, subscription: Subscription) -> None:
        """The shell has offered everything its feed held: from now on the events are live."""
        subscription.live = True

    def caught_up(self, session_id: str, seq: int) -> bool:
        """True when every event of the session up to ``seq`` is queued (or not subscribed)."""
        subscription = self._subscriptions.get(session_id)
        return subscription is None or subscription.cursor > seq

    def subscriptions(self) -> list[Subscription]:
        """The subscriptions that are still taking events."""
        return list(self._subscriptions.values())

    # --- frames out -------------------------------------------------------------------------

    def next_frame(self) -> bytes | None:
        """The next frame to write (it counts as written), or ``None`` when nothing is queued."""
        item = self._queue.pop()
        if item is None:
            return None
        self._on_change()  # room for one more event
        if item.frame is None:
            sid = item.session_id or ""
            return encode(Lagged(session_id=sid, last_seq=self._last_written.get(sid, 0)))
        if item.session_id is not None:
            self._last_written[item.session_id] = item.seq
            self.last_event = (item.session_id, item.seq)
        else:
            self.last_event = None
        return item.frame

    def has_room(self) -> bool:
        """True when one more event frame fits in the queue."""
        return self._queue.has_room()

    @property
    def queued(self) -> int:
        """How many frames wait to be written."""
        return len(self._queue)

    # --- internals --------------------------------------------------------------------------

    def _end(self, session_id: str) -> None:
        subscription = self._subscriptions.pop(session_id, None)
        if subscription is not None:
            subscription.ended = True
        self._queue.drop_session(session_id, markers=True)

    def _control(self, message: msgspec.Struct) -> None:
        if self.phase is Phase.CLOSING:
            return  # closing already: nothing more will be written after what is queued
        try:
            self._queue.put_control(encode(message))
        except QueueOverflow:
            self._close("client_not_reading")
        self._on_change()

    def _close(self, reason: str) -> None:
        self.phase = Phase.CLOSING
        self.closing = Closing(_POLICY_VIOLATION, reason)
        for subscription in self._subscriptions.values():
            subscription.ended = True
        self._subscriptions.clear()
        self._on_change()

    def _require(self, phase: Phase) -> None:
        if self.phase is not phase:
            raise LocalProtocolError(f"connection {self.id} is {self.phase.value}, not {phase.value}")

