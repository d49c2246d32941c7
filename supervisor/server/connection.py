"""The connection actor: the trio shell around one ``ConnectionCore``, on TCP or the Unix socket.

Tasks: a reader that feeds frames to the core and serves each request in its own task (so
responses may come out of order, at most ``_MAX_IN_FLIGHT`` at once), and a writer. The writer
offers each subscribed session's feed to the core from the subscription's cursor on (replay and
live delivery are one loop), then writes what the core hands out, a burst at a time; a feed
wakes it when its session publishes (``listen``). A live event does not wait for that task step:
when the writer is idle (nothing in hand, every subscription live) the feed's listener, run in
the publishing session's task, queues the new events and writes them to the socket itself as far
as the socket takes them without blocking (``send_text_nowait``), and wakes the writer only for
what is left. Under load every task step is a pass of the scheduler over every busy session and
client, so this one is worth saving: the event reaches the client one pass sooner. A slow client
only ever fills its own queue (a replay waits for room; a live subscription that overflows it is
``lagged``); the session is never blocked.

Two requests are the server's own, not the application's: ``session.(un)subscribe`` (the feeds)
and ``ui.login_code`` (a one-time code for the browser UI, minted by ``login_code`` and served
only when the client gave the token in ``hello``, not to a page the UI's cookie let in).

Ending. When the client leaves, the core closes the connection (a refused handshake, a client
that stopped reading) or the connection is cancelled (its supervisor stops it: the daemon is
stopping, after the sessions have run their close sequence), the reader and requests stop; then each subscription is caught up to its feed's end and the writer, shielded from the
cancellation, writes out what is queued within ``FLUSH_TIMEOUT``, so a client sees a session's
last events (``exit``, ``closed``) before its connection closes. A client that does not take
them in time is cut off (``aborted``: its stream must be closed without a close handshake).
Nothing is left running. A connection that crashes (a bug, or a feed that cannot be read)
closes with 1011 ``internal`` after writing what was queued, and raises: its supervisor logs it
and forgets it; no other connection notices.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterator
from typing import Protocol

import msgspec
import trio

from protocol.errors import BadHandshake, CorralError, ErrorCode, Unauthorized
from protocol.messages import ClientRequest, LoginCodeResult, SessionSubscribe, SessionUnsubscribe, UiLoginCode
from protocol.models import DaemonInfo

from supervisor.server.connection_core import ConnectionCore, Offer, Phase, Subscription
from supervisor.server.roster import Roster
from supervisor.server.websocket import ConnectionClosed, WebSocket

__all__ = ["FLUSH_TIMEOUT", "Backend", "Connection", "FeedLike"]

log = logging.getLogger("corral.connection")
_ids = itertools.count(1)
_MAX_IN_FLIGHT = 64
_CATCH_UP_TIMEOUT = 1.0
FLUSH_TIMEOUT = 2.0
"""How long a closing connection keeps writing what is queued for its client."""
_CLOSE_TIMEOUT = 1.0
_INTERNAL_ERROR = 1011
_BURST_BYTES = 1 << 20


class FeedLike(Protocol):
    """The read side of a session's log (``actors.session.feed.Feed``)."""

    @property
    def last_seq(self) -> int: ...

    def read_from(self, from_seq: int) -> Iterator[bytes]: ...

    def listen(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` (it must not raise) each time the feed grows, until ``unlisten``."""

    def unlisten(self, wake: Callable[[], None]) -> None: ...

    def published_at(self, seq: int) -> float | None:
        """The ``time.perf_counter()`` at which event ``seq`` was published, if still known."""


class Backend(Protocol):
    """What a connection needs from the application: request handling and session feeds."""

    async def handle(self, request: ClientRequest, connection_id: str) -> msgspec.Struct:
        """Serve any request but (un)subscribe; raise a ``CorralError`` to answer an error."""

    def feed(self, session_id: str) -> FeedLike:
        """The session's feed; raises ``UnknownSession``."""


class Connection:
    """One client's actor (see the module docstring)."""

    def __init__(self, ws: WebSocket, backend: Backend, *, token: str, info: DaemonInfo,
                 queue_size: int, handshake_timeout: float, by_cookie: bool = False,
                 login_code: Callable[[], LoginCodeResult] | None = None,
                 roster: Roster | None = None,
                 delivery: Callable[[float], None] | None = None) -> None:
        self.ws = ws
        self.delivery = delivery
        """Told the seconds from each live event's publish to its write (``corral.event.delivery``)."""
        self._sent: list[tuple[str, int]] = []
        self.roster = roster
        self.login_code = login_code
        self.backend = backend
        self.handshake_timeout = handshake_timeout
        self._wake = trio.Event()
        self._serving: trio.CancelScope | None = None
        self._feeds: dict[str, FeedLike] = {}
        self._broken: Exception | None = None
        """What stopped the writer from reading a feed: the connection then crashes."""
        self._in_flight = trio.Semaphore(_MAX_IN_FLIGHT)
        self._draining = False
        self._idle = False
        """The writer waits for news with no frame in hand (``_published`` may write)."""
        self._direct = False
        self._stirred = False
        self._waiters = 0
        self.aborted = False
        """Set by ``run`` when the client was cut off mid-write: its stream must be aborted."""
        self.core = ConnectionCore(f"c-{next(_ids)}", token=token, info=info, queue_size=queue_size,
                                   on_change=self._changed, by_cookie=by_cookie)
        self.id = self.core.id

    async def run(self) -> None:
        """Serve the client until it leaves or the connection is cancelled (see the module docstring)."""
        writer = trio.CancelScope(shield=True)
        crashed = False
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._writer, writer)
                try:
                    if await self._handshake():
                        if self.roster is not None and self.core.client is not None:
                            self.roster.add(self.id, self.core.client)
                        await self._serve_client()
                    if self._broken is not None:
                        raise self._broken
                except BaseException as exc:
                    crashed = _is_crash(exc)  # a bug: the supervisor logs it
                    raise
                finally:
                    writer.deadline = trio.current_time() + FLUSH_TIMEOUT
                    if not crashed:
                        self._fill()
                    self._draining = True
                    self._changed()
        finally:
            if self.roster is not None:
                self.roster.remove(self.id)
            for feed in self._feeds.values():
                feed.unlisten(self._published)
            self._feeds.clear()
            # A writer cut off by the flush bound may have left half a frame on the stream: then
            # there is no clean close to make, and the owner of the stream aborts it.
            self.aborted = writer.cancelled_caught
            if not self.aborted:
                closing = self.core.closing
                code, reason = (1000, None) if closing is None else (closing.code, closing.reason)
                if crashed:
                    code, reason = _INTERNAL_ERROR, ErrorCode.INTERNAL.value
                with trio.CancelScope(shield=True), trio.move_on_after(_CLOSE_TIMEOUT):
                    await self.ws.aclose(code=code, reason=reason)

    # --- reading and serving ----------------------------------------------------------------

    async def _handshake(self) -> bool:
        with trio.move_on_after(self.handshake_timeout) as scope:
            try:
                frame = await self.ws.receive()
            except ConnectionClosed:
                return False
        if scope.cancelled_caught:
            self.core.refuse(BadHandshake(f"no hello within {self.handshake_timeout:g} s"))
            return False
        return self.core.receive_hello(frame)

    async def _serve_client(self) -> None:
        async with trio.open_nursery() as nursery:
            self._serving = nursery.cancel_scope
            if self.core.phase is Phase.OPEN:
                await self._reader(nursery)
            nursery.cancel_scope.cancel()

    async def _reader(self, nursery: trio.Nursery) -> None:
        while True:
            try:
                frame = await self.ws.receive()
            except ConnectionClosed:
                return
            if self.core.phase is not Phase.OPEN:
                return
            request = self.core.receive_request(frame)
            if request is not None:
                try:  # when free, no schedule point before the request's task starts
                    self._in_flight.acquire_nowait()
                except trio.WouldBlock:
                    await self._in_flight.acquire()
                nursery.start_soon(self._serve, request, nursery)

    async def _serve(self, request: ClientRequest, nursery: trio.Nursery) -> None:
        try:
            match request:
                case SessionSubscribe(session_id=sid, from_seq=from_seq):
                    feed = self.backend.feed(sid)
                    self._forget(sid)
                    self.core.subscribe(request.id, sid, from_seq=from_seq, last_seq=feed.last_seq)
                    self._feeds[sid] = feed
                    feed.listen(self._published)
                case SessionUnsubscribe(session_id=sid):
                    self.backend.feed(sid)  # unknown_session for an id that never existed
                    self._forget(sid)
                    self.core.unsubscribe(request.id, sid)
                case UiLoginCode():
                    # Only the token mints codes: a page must not grow logins of its own.
                    if not self.core.token_given or self.login_code is None:
                        raise Unauthorized("ui.login_code needs the daemon's token in hello")
                    self.core.answer(request.id, self.login_code())
                case _:
                    result = await self.backend.handle(request, self.id)
                    await self._let_feed_catch_up(getattr(request, "session_id", None))
                    self.core.answer(request.id, result)
        except CorralError as exc:
            self.core.fail(request.id, exc)
        except Exception as exc:
            log.exception("%s: request %s failed", self.id, type(request).__name__)
            self.core.fail(request.id, CorralError(f"internal error: {type(exc).__name__}"))
        finally:
            self._in_flight.release()

    async def _let_feed_catch_up(self, session_id: str | None) -> None:
        """Queue the session's events up to now before the response, so that a client that
        hears "closed" has already been sent the ``exit`` (bounded: a replay waiting for room
        can't hold it)."""
        if session_id is None:
            return
        try:
            target = self.backend.feed(session_id).last_seq
        except CorralError:
            return
        self._fill()
        with trio.move_on_after(_CATCH_UP_TIMEOUT):
            await self._until(lambda: self.core.caught_up(session_id, target))

    def _forget(self, session_id: str) -> None:
        feed = self._feeds.pop(session_id, None)
        if feed is not None:
            feed.unlisten(self._published)

    # --- writing ----------------------------------------------------------------------------

    async def _writer(self, scope: trio.CancelScope) -> None:
        """Offer the feeds to the core and write what it hands out, a burst at a time; shielded
        (``run`` bounds it), so no frame is cut short."""
        with scope:
            try:
                yielded = True
                while True:
                    self._fill()
                    frames = self._take_burst()
                    if not frames and not self.ws.pending:
                        if self._draining:
                            return
                        self._idle = True
                        try:
                            await self._wake.wait()  # a feed grew, a frame was queued, or the end
                        finally:
                            self._idle = False
                        yielded = True
                        continue
                    if not yielded:  # a backlog (a replay): let the others run between bursts
                        await trio.lowlevel.cancel_shielded_checkpoint()
                    yielded = await self.ws.send_text(frames)
                    if self._sent:
                        self._delivered()
            except ConnectionClosed:
                pass
            finally:
                if self._serving is not None:
                    self._serving.cancel()

    def _fill(self) -> None:
        """Offer each subscription what its feed holds beyond its cursor, until the queue is
        full (a replay goes on once the writer made room) or the feed is exhausted (from then
        on the subscription is live). A feed that cannot be read breaks the connection: the
        reader stops, what is queued is written, and ``run`` raises what went wrong."""
        if self._broken is not None:
            return
        for subscription in self.core.subscriptions():
            feed = self._feeds.get(subscription.session_id)
            if feed is None:
                continue
            try:
                if subscription.cursor <= feed.last_seq:
                    for frame in feed.read_from(subscription.cursor):
                        if self.core.offer(subscription, frame) is not Offer.QUEUED:
                            break
                    else:
                        self.core.replayed(subscription)
                else:
                    self.core.replayed(subscription)
            except Exception as exc:
                log.exception("%s: cannot read session %s", self.id, subscription.session_id)
                self._broken = exc
                if self._serving is not None:
                    self._serving.cancel()
                return

    def _take_burst(self) -> list[bytes]:
        """Every frame queued now (up to ``_BURST_BYTES``): one write, one wake-up of the client."""
        frames: list[bytes] = []
        size = 0
        while size < _BURST_BYTES and (frame := self.core.next_frame()) is not None:
            frames.append(frame)
            size += len(frame)
            if self.delivery is not None and self.core.last_event is not None:
                self._sent.append(self.core.last_event)
        return frames

    def _delivered(self) -> None:
        """Tell ``delivery`` how long each event just written took since its publish (events
        published too long ago for the feed to remember, a replay's, are not told)."""
        now = time.perf_counter()
        for session_id, seq in self._sent:
            feed = self._feeds.get(session_id)
            published = feed.published_at(seq) if feed is not None else None
            if published is not None and self.delivery is not None:
                self.delivery(now - published)
        self._sent.clear()

    def _published(self) -> None:
        """A feed's listener, run in the publishing session's task: write the new events now
        when the writer is idle (see the module docstring), else wake it. Never raises and never
        blocks; a bug here breaks this connection (``run`` raises it), not the session."""
        if not (self._idle and not self._draining and self.ws.writable_now()
                and all(s.live for s in self.core.subscriptions())):
            self._changed()
            return
        self._direct, self._stirred = True, False
        try:
            self._fill()
            frames = self._take_burst()
            if frames:
                self.ws.send_text_nowait(frames)
                if self._sent:
                    self._delivered()
        except Exception as exc:
            log.exception("%s: cannot write the events published", self.id)
            self._broken = exc
            if self._serving is not None:
                self._serving.cancel()
        finally:
            self._direct = False
        left = (self.ws.pending or self.core.queued or self.ws.closed is not None
                or self._broken is not None or self.core.closing is not None)
        if self._stirred and (left or self._waiters):
            self._changed()

    def _changed(self) -> None:
        if self._direct:  # ``_published`` wakes the writer afterwards if it must
            self._stirred = True
            return
        self._wake.set()
        self._wake = trio.Event()
        if self.core.closing is not None and self._serving is not None:
            self._serving.cancel()

    async def _until(self, condition: Callable[[], bool]) -> None:
        self._waiters += 1
        try:
            while not condition():
                await self._wake.wait()
        finally:
            self._waiters -= 1


def _is_crash(exc: BaseException) -> bool:
    """True unless ``exc`` is a cancellation (possibly grouped): the connection was stopped."""
    if isinstance(exc, BaseExceptionGroup):
        return any(_is_crash(inner) for inner in exc.exceptions)
    return not isinstance(exc, trio.Cancelled)
