"""An actor's inbox: a bounded queue with a trio memory channel's semantics, plus request/reply
that never hangs.

An actor owns one ``Mailbox``: it receives with ``async for msg in mailbox`` (inside
``async with mailbox:``, which closes it when the actor stops, however it stops); any number of
tasks send to it. A request is a message that carries a ``Reply`` (a one-shot answer slot):
``await mailbox.request(lambda reply: GetState(reply=reply), timeout=5)``.

What a requester sees, whatever happens to the actor:

* the actor answers: ``reply.send(value)`` returns ``value``; ``reply.fail(err)`` raises ``err``;
* the mailbox is (or becomes) closed before an answer — the actor stopped, crashed, or stopped
  taking messages: ``ActorGone``. This covers requests still buffered, requests the actor took
  but never answered, and senders blocked on a full mailbox;
* no answer within ``timeout`` seconds (waiting for room in the mailbox included): ``Timeout``.
  A late answer is then dropped (``reply.send`` returns ``False``).

A mailbox belongs to one actor instance: a restarted actor opens a new one, so requests to the
old instance fail with ``ActorGone`` rather than reaching a stranger.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable
from types import TracebackType
from typing import Any, Generic, Self, TypeVar, cast

import msgspec
import outcome
import trio

from protocol.errors import ActorGone, Timeout

__all__ = ["Mailbox", "MailboxFull", "MailboxStats", "Reply"]

T = TypeVar("T")
R = TypeVar("R")


_EMPTY = object()
"""``Mailbox._take``'s "nothing ready"."""


class MailboxFull(Timeout):
    """``send_nowait`` found the mailbox full: a send that was allowed no wait at all (code ``timeout``)."""


class MailboxStats(msgspec.Struct, kw_only=True, frozen=True):
    """A snapshot of one mailbox: queue depth and who is waiting on it."""

    name: str
    depth: int
    max_size: float
    waiting_senders: int
    waiting_receivers: int
    pending_requests: int
    sent: int
    received: int
    dropped: int
    closed: bool


class Reply(Generic[R]):
    """A one-shot answer slot, carried inside a request message.

    The first of ``send``, ``fail`` or the requester giving up (timeout, cancellation, the
    mailbox closing) wins; every later attempt returns ``False`` and changes nothing.
    """

    __slots__ = ("_done", "_error", "_event", "_value")

    def __init__(self) -> None:
        self._event = trio.Event()
        self._done = False
        self._value: R | None = None
        self._error: BaseException | None = None

    @property
    def done(self) -> bool:
        """Whether this slot was answered, failed or abandoned."""
        return self._done

    def send(self, value: R) -> bool:
        """Answer the request; ``False`` if it was already answered or the requester is gone."""
        if self._done:
            return False
        self._done, self._value = True, value
        self._event.set()
        return True

    def fail(self, error: BaseException) -> bool:
        """Make the requester raise ``error`` (use a ``CorralError``); ``False`` if already settled."""
        if self._done:
            return False
        self._done, self._error = True, error
        self._event.set()
        return True

    def _abandon(self) -> None:
        self._done = True
        self._event.set()

    async def _wait(self) -> R:
        await self._event.wait()
        if self._error is not None:
            raise self._error
        # send() set _value (possibly to None, when R admits it) before setting the event.
        return cast(R, self._value)


class Mailbox(Generic[T]):
    """A bounded inbox of messages of type ``T`` for one actor.

    ``max_size`` bounds the number of buffered messages (``0`` is a rendezvous). ``math.inf`` is
    accepted for internal inboxes whose producers are bounded by construction; say why where used.
    """

    __slots__ = ("_buffer", "_closed", "_dropped", "_max_size", "_outstanding", "_received",
                 "_receivers", "_sent", "_senders", "name")

    def __init__(self, max_size: int | float, *, name: str = "mailbox") -> None:
        if not (max_size == math.inf or (isinstance(max_size, int) and max_size >= 0)):
            raise ValueError(f"max_size must be a non-negative int or math.inf, not {max_size!r}")
        self.name = name
        self._max_size = max_size
        # A trio memory channel's semantics (FIFO senders and receivers, a message handed straight
        # to a waiting receiver, a blocked sender's message taken into the buffer as room appears),
        # kept here: a channel pair is ~1.7 KB, and every session holds two mailboxes (its own and
        # its harness supervisor's). Each part is made when first needed (issue 24).
        self._buffer: collections.deque[T] | None = None
        """Messages waiting for the actor (made when one must wait, dropped once drained)."""
        self._receivers: list[trio.lowlevel.Task] | None = None
        self._senders: list[tuple[trio.lowlevel.Task, T]] | None = None
        """Senders waiting for room, each with its message."""
        self._outstanding: set[Reply[Any]] | None = None
        self._closed = False
        self._sent = 0
        self._received = 0
        self._dropped = 0

    @property
    def closed(self) -> bool:
        """Whether the owning actor closed this mailbox (or stopped)."""
        return self._closed

    async def send(self, msg: T, *, timeout: float = math.inf) -> None:
        """Deliver ``msg``, waiting up to ``timeout`` seconds for room.

        Raises ``ActorGone`` if the mailbox is or becomes closed, ``Timeout`` if it stays full.
        Cancellation leaves the message undelivered.
        """
        with trio.move_on_after(timeout):
            await self._deliver(msg)
            return
        raise Timeout(f"{self.name}: still full after {timeout} s", data={"mailbox": self.name})

    def send_nowait(self, msg: T) -> None:
        """Deliver ``msg`` now or raise: ``MailboxFull`` when full, ``ActorGone`` when closed."""
        if not self._offer(msg):
            raise MailboxFull(f"{self.name} is full", data={"mailbox": self.name})

    async def request(self, make: Callable[[Reply[R]], T], *, timeout: float) -> R:
        """Send ``make(reply)`` and wait for the actor's answer, ``timeout`` seconds in all.

        Returns what the actor passed to ``reply.send``; raises what it passed to ``reply.fail``,
        ``ActorGone`` if the mailbox closes first, ``Timeout`` when time runs out. On timeout or
        cancellation the reply is abandoned, so a late answer is dropped.
        """
        reply: Reply[R] = Reply()
        if self._outstanding is None:
            self._outstanding = set()
        self._outstanding.add(reply)
        try:
            with trio.move_on_after(timeout):
                await self._deliver(make(reply))
                return await reply._wait()
            raise Timeout(f"{self.name}: no reply within {timeout} s", data={"mailbox": self.name})
        finally:
            if self._outstanding is not None:
                self._outstanding.discard(reply)
            reply._abandon()

    async def receive(self) -> T:
        """The next message, waiting for one; ``trio.EndOfChannel`` once the mailbox is closed."""
        await trio.lowlevel.checkpoint_if_cancelled()
        msg = self._take()  # not ``receive_nowait``: a raise would keep a frame object on this coroutine
        if msg is not _EMPTY:
            await trio.lowlevel.cancel_shielded_checkpoint()
            return cast(T, msg)
        task = trio.lowlevel.current_task()
        if self._receivers is None:
            self._receivers = []
        self._receivers.append(task)

        def abort(_: Any) -> trio.lowlevel.Abort:
            if self._receivers is not None:
                self._receivers.remove(task)
            return trio.lowlevel.Abort.SUCCEEDED

        taken = await trio.lowlevel.wait_task_rescheduled(abort)  # a sender's message, or EndOfChannel
        self._received += 1
        return cast(T, taken)

    def receive_nowait(self) -> T:
        """The next message if one is buffered: ``trio.WouldBlock`` if none is,
        ``trio.EndOfChannel`` once the mailbox is closed. Lets an actor take a batch of ready
        messages without a schedule point between them."""
        msg = self._take()
        if msg is _EMPTY:
            raise trio.WouldBlock
        return cast(T, msg)

    def _take(self) -> T | object:
        """The next message (counted), ``_EMPTY`` if none is ready; ``EndOfChannel`` once closed."""
        buffer, senders = self._buffer, self._senders
        if buffer:
            msg = buffer.popleft()
            if senders:  # room now: the first waiting sender's message joins the queue
                task, waiting = senders.pop(0)
                buffer.append(waiting)
                self._sent += 1
                trio.lowlevel.reschedule(task)
            if not buffer:
                self._buffer = None
        elif senders:  # a rendezvous (``max_size`` 0): straight from the sender
            task, msg = senders.pop(0)
            self._sent += 1
            trio.lowlevel.reschedule(task)
        elif self._closed:
            raise trio.EndOfChannel
        else:
            return _EMPTY
        self._received += 1
        return msg

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    def close(self) -> None:
        """Stop taking messages: buffered messages are dropped, every waiting request, buffered,
        taken-but-unanswered or blocked on a full mailbox, gets ``ActorGone``. Idempotent.
        """
        if self._closed:
            return
        self._closed = True
        senders, self._senders = self._senders or [], None
        for task, _ in senders:
            trio.lowlevel.reschedule(task, outcome.Error(self._gone()))
        receivers, self._receivers = self._receivers or [], None
        for task in receivers:
            trio.lowlevel.reschedule(task, outcome.Error(trio.EndOfChannel()))
        self._dropped += len(self._buffer or ())
        self._buffer = None
        for reply in list(self._outstanding or ()):
            reply.fail(self._gone())
        self._outstanding = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def statistics(self) -> MailboxStats:
        """A snapshot: buffered messages, capacity, blocked tasks, requests awaiting an answer."""
        return MailboxStats(
            name=self.name,
            depth=len(self._buffer or ()),
            max_size=self._max_size,
            waiting_senders=len(self._senders or ()),
            waiting_receivers=len(self._receivers or ()),
            pending_requests=len(self._outstanding or ()),
            sent=self._sent,
            received=self._received,
            dropped=self._dropped,
            closed=self._closed,
        )

    async def _deliver(self, msg: T) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._offer(msg):
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        entry = (trio.lowlevel.current_task(), msg)
        if self._senders is None:
            self._senders = []
        self._senders.append(entry)

        def abort(_: Any) -> trio.lowlevel.Abort:
            if self._senders is not None:
                self._senders[:] = [waiting for waiting in self._senders if waiting is not entry]
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)  # taken (counted by the taker), or ActorGone

    def _offer(self, msg: T) -> bool:
        """Hand ``msg`` to the first waiting receiver, or queue it if there is room; ``False``
        when full (or a rendezvous with no receiver waiting). ``ActorGone`` once closed."""
        if self._closed:
            raise self._gone()
        if self._receivers:
            trio.lowlevel.reschedule(self._receivers.pop(0), outcome.Value(msg))
        elif len(self._buffer or ()) < self._max_size:
            if self._buffer is None:
                self._buffer = collections.deque()
            self._buffer.append(msg)
        else:
            return False
        self._sent += 1
        return True

    def _gone(self) -> ActorGone:
        return ActorGone(f"{self.name} is closed: its actor stopped", data={"mailbox": self.name})
