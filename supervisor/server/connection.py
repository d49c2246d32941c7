"""The connection actor: one per client, on TCP or the Unix socket.

It owns the handshake, a reader that decodes and dispatches requests (each in its own task, so
responses may come out of order), one pump per subscription, and a writer that drains the
bounded ``OutQueue``. A slow client only ever fills its own queue: a live subscription whose
event does not fit is ``lagged`` and unsubscribed; the session is never blocked. When the
client goes away, the connection's nursery cancels its pumps and requests; nothing is left.
"""

from __future__ import annotations

import hmac
import itertools
import logging
from collections.abc import Iterator
from typing import Protocol

import msgspec
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from protocol.base import PROTOCOL_VERSION
from protocol.codec import FrameError, decode_hello, decode_request, encode
from protocol.errors import (
    BadHandshake,
    CorralError,
    Unauthorized,
    UnsupportedProtocol,
)
from protocol.messages import (
    ClientRequest,
    ErrorFrame,
    Lagged,
    Ok,
    SessionSubscribe,
    SessionUnsubscribe,
    SubscribeResult,
    Welcome,
)
from protocol.models import DaemonInfo

from supervisor.server.outqueue import Item, OutQueue, QueueOverflow

log = logging.getLogger("corral.connection")
_ids = itertools.count(1)
_MAX_IN_FLIGHT = 64


class FeedLike(Protocol):
    """The read side of a session's log (``actors.session.feed.Feed``)."""

    @property
    def last_seq(self) -> int: ...

    def read_from(self, from_seq: int) -> Iterator[bytes]: ...

    async def wait_past(self, seq: int) -> None: ...


class Backend(Protocol):
    """What a connection needs from the application: request handling and session feeds."""

    async def handle(self, request: ClientRequest, connection_id: str) -> msgspec.Struct:
        """Serve any request but (un)subscribe; raise a ``CorralError`` to answer an error."""

    def feed(self, session_id: str) -> FeedLike:
        """The session's feed; raises ``UnknownSession``."""


class Connection:
    """One client's actor."""

    def __init__(self, ws: WebSocketConnection, backend: Backend, *, token: str, info: DaemonInfo,
                 queue_size: int, handshake_timeout: float) -> None:
        self.id = f"c-{next(_ids)}"
        self.ws = ws
        self.backend = backend
        self.token = token
        self.info = info
        self.queue = OutQueue(queue_size)
        self.handshake_timeout = handshake_timeout
        self._pumps: dict[str, trio.CancelScope] = {}
        self._last_written: dict[str, int] = {}
        self._in_flight = trio.Semaphore(_MAX_IN_FLIGHT)
        self._cursors: dict[str, int] = {}
        self._pumped = trio.Event()

    async def run(self) -> None:
        """Serve the client until it leaves; every task of the connection ends with it."""
        if not await self._handshake():
            return
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._writer, nursery.cancel_scope)
                await self._reader(nursery)
                nursery.cancel_scope.cancel()
        except QueueOverflow as exc:
            log.warning("%s dropped: %s", self.id, exc)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await self._flush()
                await self.ws.aclose()

    async def _flush(self) -> None:
        """Send what is still queued (the daemon is stopping: let clients see the end)."""
        try:
            while len(self.queue):
                await self._write(await self.queue.get())
        except ConnectionClosed:
            pass

    async def _handshake(self) -> bool:
        error: CorralError
        with trio.move_on_after(self.handshake_timeout) as scope:
            try:
                frame = await self.ws.get_message()
            except ConnectionClosed:
                return False
        if scope.cancelled_caught:
            await self._refuse(BadHandshake(f"no hello within {self.handshake_timeout:g} s"))
            return False
        try:
            hello = decode_hello(frame)
        except msgspec.DecodeError as exc:
            error = BadHandshake(f"the first frame must be hello: {exc}")
        else:
            if not hmac.compare_digest(hello.token.encode(), self.token.encode()):
                error = Unauthorized("wrong or missing token")
            elif hello.protocol != PROTOCOL_VERSION:
                error = UnsupportedProtocol(
                    f"protocol {hello.protocol} is not supported; this daemon speaks {PROTOCOL_VERSION}")
            else:
                await self.ws.send_message(encode(Welcome(
                    connection_id=self.id, daemon=self.info)).decode())
                return True
        await self._refuse(error)
        return False

    async def _refuse(self, error: CorralError) -> None:
        frame = ErrorFrame(id=None, code=error.code.value, message=error.message)
        with trio.move_on_after(2):
            try:
                await self.ws.send_message(encode(frame).decode())
                await self.ws.aclose(code=1008, reason=error.code.value)
            except ConnectionClosed:
                pass

    async def _reader(self, nursery: trio.Nursery) -> None:
        while True:
            try:
                frame = await self.ws.get_message()
            except ConnectionClosed:
                return
            try:
                request = decode_request(frame)
            except FrameError as exc:
                self._answer_error(exc.id, exc.error)
                continue
            await self._in_flight.acquire()
            nursery.start_soon(self._serve, request, nursery)

    async def _serve(self, request: ClientRequest, nursery: trio.Nursery) -> None:
        try:
            match request:
                case SessionSubscribe(session_id=sid, from_seq=from_seq):
                    feed = self.backend.feed(sid)
                    self._stop_pump(sid)
                    start = max(from_seq, 1)
                    self._last_written[sid] = start - 1
                    self.queue.put_control(encode(Ok(id=request.id, result=SubscribeResult(
                        last_seq=feed.last_seq))))
                    scope = trio.CancelScope()
                    self._pumps[sid] = scope
                    nursery.start_soon(self._pump, sid, feed, start, scope)
                case SessionUnsubscribe(session_id=sid):
                    self.backend.feed(sid)  # unknown_session for an id that never existed
                    self._stop_pump(sid)
                    self.queue.put_control(encode(Ok(id=request.id, result={})))
                case _:
                    result = await self.backend.handle(request, self.id)
                    await self._let_pump_catch_up(getattr(request, "session_id", None))
                    self.queue.put_control(encode(Ok(id=request.id, result=result)))
        except CorralError as exc:
            self._answer_error(request.id, exc)
        except Exception as exc:
            log.exception("request %s failed", type(request).__name__)
            self._answer_error(request.id, CorralError(f"internal error: {type(exc).__name__}"))
        finally:
            self._in_flight.release()

    async def _let_pump_catch_up(self, session_id: str | None) -> None:
        """Queue the session's events up to now before the response, so that a client that
        hears "closed" has already been sent the ``exit`` (bounded: a lagging pump can't hold it)."""
        if session_id is None or session_id not in self._pumps:
            return
        try:
            target = self.backend.feed(session_id).last_seq
        except CorralError:
            return
        with trio.move_on_after(1):
            while session_id in self._pumps and self._cursors.get(session_id, 0) <= target:
                await self._pumped.wait()

    def _answer_error(self, request_id: int | None, error: CorralError) -> None:
        self.queue.put_control(encode(ErrorFrame(
            id=request_id, code=error.code.value, message=error.message, data=error.data)))

    def _stop_pump(self, session_id: str) -> None:
        scope = self._pumps.pop(session_id, None)
        if scope is not None:
            scope.cancel()
        self.queue.drop_session(session_id, markers=True)

    async def _pump(self, session_id: str, feed: FeedLike, cursor: int, scope: trio.CancelScope) -> None:
        """Replay from ``cursor`` (with backpressure), then follow live (lagging when full)."""
        live = False
        with scope:
            while True:
                for frame in feed.read_from(cursor):
                    if not self.queue.has_room():
                        if live:
                            self._pumps.pop(session_id, None)
                            self.queue.put_lagged(session_id)
                            return
                        await self.queue.wait_room()
                    self.queue.put_event(session_id, cursor, frame)
                    cursor += 1
                self._cursors[session_id] = cursor
                self._pumped.set()
                self._pumped = trio.Event()
                live = True
                await feed.wait_past(cursor - 1)

    async def _writer(self, scope: trio.CancelScope) -> None:
        try:
            while True:
                await self._write(await self.queue.get())
        except ConnectionClosed:
            scope.cancel()

    async def _write(self, item: Item) -> None:
        if item.frame is None:
            sid = item.session_id or ""
            payload = encode(Lagged(session_id=sid, last_seq=self._last_written.get(sid, 0)))
        else:
            payload = item.frame
        await self.ws.send_message(payload.decode())
        if item.frame is not None and item.session_id is not None:
            self._last_written[item.session_id] = item.seq

