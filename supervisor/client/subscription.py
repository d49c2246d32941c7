"""The client's frame router: answers go to the request waiting on their id, events to their subscription.

It is the synchronous heart of ``client.Client``: the reader task feeds it every text frame
(``route``) and it never blocks. A subscription is inactive until the ``ok`` of its
``session.subscribe`` passes through here (the daemon sends that ``ok`` before any event of
the subscription, so frames still in flight from an older one are dropped, not mixed in);
it is cut on ``lagged``, on a full buffer, or when the connection is lost (``lose``), which
also settles every waiting request with ``ConnectionLost``.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import msgspec
import trio

from protocol.codec import decode_server_frame
from protocol.errors import CorralError, DaemonNotRunning
from protocol.messages import ErrorFrame, EventFrame, Lagged, Ok, Welcome

__all__ = ["ConnectionLost", "Pending", "RawEventFrame", "Router", "Subscription"]

log = logging.getLogger("corral.client")


class ConnectionLost(DaemonNotRunning):
    """The connection to the daemon dropped (the daemon stopped, or this client closed it)."""


class RawEventFrame(NamedTuple):
    """An ``event`` frame as received: its text, and its decoded form (``None`` for an event kind this client does not know)."""

    session_id: str
    seq: int
    raw: str
    frame: EventFrame | None


class Pending:
    """The one answer of one request."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.answer: Ok | ErrorFrame | CorralError | None = None

    def settle(self, answer: Ok | ErrorFrame | CorralError) -> None:
        if self.answer is None:
            self.answer = answer
            self.done.set()


class Subscription:
    """One round of one session's subscription: inactive until its ``ok``, then cut on lag or loss."""

    def __init__(self, session_id: str, buffer: int) -> None:
        self.session_id = session_id
        self.send, self.receive = trio.open_memory_channel[RawEventFrame](buffer)
        self.active = False
        self.confirmed = False
        self.error: CorralError | None = None

    def cut(self, error: CorralError | None = None) -> None:
        """Stop delivering; the iterator drains what is buffered, then resubscribes or raises ``error``."""
        self.active = False
        if error is not None and self.error is None:
            self.error = error
        self.send.close()


class Router:
    """Routing state of one connection."""

    def __init__(self) -> None:
        self.pending: dict[int, Pending] = {}
        self.subscriptions: dict[str, Subscription] = {}
        self.subscribing: dict[int, Subscription] = {}
        self.lost: ConnectionLost | None = None

    def expect(self, request_id: int, subscription: Subscription | None = None) -> Pending:
        """Register a request before it is sent; ``subscription`` goes live with its ``ok``."""
        pending = self.pending[request_id] = Pending()
        if subscription is not None:
            self.subscribing[request_id] = subscription
        return pending

    def forget(self, request_id: int) -> None:
        self.pending.pop(request_id, None)
        self.subscribing.pop(request_id, None)

    def route(self, text: str) -> None:
        """Deliver one frame from the daemon; never blocks, never raises."""
        try:
            frame = decode_server_frame(text)
        except msgspec.DecodeError:
            self._route_unknown(text)
            return
        match frame:
            case Ok(id=request_id) | ErrorFrame(id=int() as request_id):
                if isinstance(frame, Ok) and (sub := self.subscribing.get(request_id)) is not None:
                    sub.active = sub.confirmed = True
                pending = self.pending.get(request_id)
                if pending is not None:
                    pending.settle(frame)
            case ErrorFrame(code=code, message=message):
                log.warning("daemon error without a request id: %s: %s", code, message)
            case EventFrame(session_id=sid, seq=seq):
                self._deliver(RawEventFrame(sid, seq, text, frame))
            case Lagged(session_id=sid, last_seq=last_seq):
                sub = self.subscriptions.get(sid)
                if sub is not None and sub.active:
                    log.debug("lagged on %s after %d", sid, last_seq)
                    sub.cut()
            case Welcome():
                log.warning("unexpected welcome after the handshake")

    def lose(self, error: ConnectionLost) -> None:
        """The connection is gone: settle every request and cut every subscription with ``error``."""
        if self.lost is not None:
            return
        self.lost = error
        for pending in self.pending.values():
            pending.settle(ConnectionLost(error.message))
        for sub in self.subscriptions.values():
            sub.cut(ConnectionLost(error.message))

    def _route_unknown(self, text: str) -> None:
        try:
            envelope = msgspec.json.decode(text, type=_EventEnvelope)
        except msgspec.DecodeError:
            log.warning("undecodable frame from the daemon: %.200s", text)
            return
        if envelope.type == "event":
            self._deliver(RawEventFrame(envelope.session_id, envelope.seq, text, None))

    def _deliver(self, item: RawEventFrame) -> None:
        sub = self.subscriptions.get(item.session_id)
        if sub is None or not sub.active:
            return
        try:
            sub.send.send_nowait(item)
        except trio.WouldBlock:
            log.debug("local buffer of %s full at seq %d", item.session_id, item.seq)
            sub.cut()
        except trio.BrokenResourceError:
            sub.cut()  # its iterator is closing: it unsubscribes


class _EventEnvelope(msgspec.Struct):
    type: str
    session_id: str = ""
    seq: int = 0
