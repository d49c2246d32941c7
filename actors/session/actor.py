"""The session actor: one inbox loop around the ``SessionCore``.

Theory of operation
-------------------
The core (``actors.session.core``) takes every decision; this loop owns the I/O: the event log,
the harness child's supervisor (``actors.session.child``) and the timers. It takes from a
bounded inbox the messages that are ready (a client request with its one-shot reply, a notice
about the harness child; up to ``_BATCH`` at once, with no wait between them), hands each to
the core with the time, and performs the outputs in order:

* ``Emit``: append to the log (``os.write``; no fsync in the loop). Before an answer and at the
  end of each batch the loop *publishes*: it shows the new events to the subscribers
  (``Feed.appended``, one wake-up per batch, not per event) and awaits the log's ``commit`` (an
  fsync in a worker thread, when the durability setting asks for one; under ``event`` before
  the wake-up, under ``turn`` right after it), so every event a client sees is in the file
  first, and appends are never reordered around a sync.
* ``Write``, ``CloseChild`` and ``RunWork`` (a client-side job, run beside the loop): to the
  child generation they name, nowhere else.
* ``Answer``: the caller's reply. ``SaveMeta``: ``meta.json``, in a worker thread.

Between messages the loop sleeps at most until the core's ``next_deadline`` and then feeds it a
``Tick`` (permission timeouts, stall detection).

**Events from outside.** ``announce(event)`` puts an event the daemon has about this session (a
``workspace`` change, a connection its sandbox's proxy refused) into the inbox; the loop appends it like its own, so the log keeps one
writer. So it does with the events of the daemon's ``after_result`` hook, run beside the loop
(``actors.session.afterresult``); the loop settles those runs as a close starts and before the
close's ``exit``, within one ``AFTER_RESULT_TIMEOUT`` (the close bounds grow by that much).

**Lifetime.** ``run`` is the start function of a ``temporary`` child of the sessions supervisor.
It reports ready once the first child generation was heard of, so a new session is already idle
(or already restarting) when its creator hears of it. The loop and the child's supervisor run in
a shielded scope: when the daemon stops the session (cancels ``run``), the loop is sent ``Stop``
and the core closes the session as ``session.close`` would (closing, open permissions cancelled,
the child's goodbye and close sequence, ``exit``, closed), all logged before ``run`` returns. If
that takes longer than ``close_bound`` (``close_timeout`` plus a margin, plus the after-result
wait), the child is killed and the end is logged anyway (``Abandoned``). A bug inside the loop
is logged as an ``error`` event before the session ends ``failed`` (``Abort``); a log that
cannot take events ends it ``failed`` without more events (``StorageLost``). Either way the
daemon and the other sessions go on. The loop's inbox messages are in ``actors.session.inbox``,
what it needs from the daemon in ``actors.session.deps``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from typing import Any

import msgspec
import trio

from actors.harness import HarnessRequest
from actors.sandboxing.netproxy import SessionProxy
from actors.session.afterresult import AFTER_RESULT_TIMEOUT, AfterResults
from actors.session.child import Harness
from actors.session.core import SessionCore
from actors.session.deps import Offload, SessionDeps, in_thread
from actors.session.eventlog import EventLog
from actors.session.feed import Feed
from actors.session.framelog import FrameLog
from actors.session.inbox import AfterResultReady, Announce, Call, LogBroken, Message, Replies
from actors.session.messages import (
    Abandoned,
    Abort,
    Answer,
    CloseChild,
    Emit,
    Input,
    Output,
    Request,
    RunWork,
    SaveMeta,
    Stop,
    StorageLost,
    Tick,
    Write,
)
from actors.session.config import KILL_MARGIN
from actors.session.meta import SessionMeta, write_meta
from protocol.errors import ActorGone, SessionClosed, StorageFailed
from protocol.events import Delivery, Event, Exit, Result, SessionState
from protocol.messages import ClientRequest, Empty, SessionClose, SessionPrompt
from protocol.models import SessionInfo
from supervisor.proc.spec import redact
from supervisor.tree.mailbox import Mailbox, MailboxFull

__all__ = ["Session"]

log = logging.getLogger("corral.session")

_REQUEST_TIMEOUT = 30.0
_BATCH = 64
"""Messages the loop takes at most before it publishes (and lets other tasks run)."""


class Session:
    """The handle the daemon and connection actors hold; its methods are the session's API."""

    def __init__(self, meta: SessionMeta, request: HarnessRequest, deps: SessionDeps,
                 log: EventLog, frame_log: FrameLog | None = None, *, resumed: bool = False) -> None:
        self.deps = deps
        self.log = log
        self.feed = Feed(log)
        self.core = SessionCore(meta, request, deps.driver, deps.sessions, now=trio.current_time(),
                                resumed=resumed)
        self.closed = trio.Event()
        """Set once the session has ended and its log is closed."""
        self._frame_log = frame_log
        self._offload: Offload[Any] = deps.offload or in_thread
        self._after = (None if deps.after_result is None
                       else AfterResults(deps.after_result, meta.id, self._after_result_ready))
        self._inbox: Mailbox[Message] = Mailbox(
            deps.sessions.inbox_size, name=f"session {meta.id}")
        self._replies = Replies()
        self._published = log.last_seq
        self._nursery: trio.Nursery | None = None
        """The loop's nursery while it runs: where the flusher starts when writes are pending."""
        self._flushing = False
        self.proxy = SessionProxy.for_session(request, meta.harness, deps.driver, self.announce)
        """The sandbox's network proxy (``net = "model"``), started before the harness; else None."""
        self.harness = Harness(
            driver=deps.driver, session_id=meta.id, harness=meta.harness, sessions=deps.sessions,
            children=deps.children, ledger=deps.ledger, tell=self._tell,
            request=self._child_request, frame_log=frame_log, opener=deps.opener)

    # --- the API the daemon calls --------------------------------------------------------

    @property
    def id(self) -> str:
        return self.core.meta.id

    @property
    def meta(self) -> SessionMeta:
        return self.core.meta

    @property
    def state(self) -> SessionState:
        return self.core.state

    def info(self) -> SessionInfo:
        """A snapshot for ``session.get``/``session.list``."""
        return self.core.info(self.log.last_seq)

    @property
    def close_bound(self) -> float:
        """Seconds a close may take before the child is killed: the harness's close sequence
        and kill margin, after the wait for an after-result run (if the session has a hook)."""
        settle = 0.0 if self._after is None else AFTER_RESULT_TIMEOUT
        return self.deps.sessions.close_timeout + KILL_MARGIN + settle

    async def call(self, request: ClientRequest, by: str, *, by_name: str = "") -> msgspec.Struct:
        """Serve a session request from connection ``by`` (whose client is called ``by_name``);
        typed errors, never a hang."""
        timeout = _REQUEST_TIMEOUT
        if isinstance(request, SessionClose):
            if self.core.finished:
                return Empty()
            timeout = self.close_bound - KILL_MARGIN + _REQUEST_TIMEOUT
        try:
            result: msgspec.Struct = await self._inbox.request(
                lambda reply: Call(request, by, reply, by_name), timeout=timeout)
        except ActorGone:
            if isinstance(request, SessionClose):
                await self.closed.wait()
                return Empty()
            raise SessionClosed(f"session {self.id} is {self.state}") from None
        return result

    async def prompt(self, text: str, by: str) -> Delivery:
        """Send a prompt (``session.create {prompt}``)."""
        result = await self.call(SessionPrompt(id=0, session_id=self.id, text=text), by)
        return result.delivery  # type: ignore[attr-defined, no-any-return]

    async def announce(self, event: Event) -> None:
        """Append ``event`` to the log through the loop (returns once there); else ``ActorGone``."""
        await self._inbox.request(lambda reply: Announce(event, reply), timeout=_REQUEST_TIMEOUT)

    async def close(self, by: str) -> None:
        """Run the close sequence and return once the session has ended."""
        await self.call(SessionClose(id=0, session_id=self.id), by)
        await self.closed.wait()

    # --- the actor ------------------------------------------------------------------------

    def _child_request(self) -> HarnessRequest:
        request = self.core.child_request()
        return request if self.proxy is None else self.proxy.attach(request)

    async def run(self, *, task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED) -> None:
        """Run until closed or failed; cancelling it closes the session (see the module docstring)."""
        ended = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                try:
                    await nursery.start(self._body, ended)
                    task_status.started(self)
                    await ended.wait()
                finally:
                    if not ended.is_set():  # cancelled: the daemon stops this session
                        with trio.CancelScope(shield=True):
                            await self._stop(ended)
                            if self._nursery is not None:  # the close overran: the body ends now
                                self._nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await self._wind_up()

    async def _body(self, ended: trio.Event, *, task_status: trio.TaskStatus[None]) -> None:
        try:
            async with trio.open_nursery() as nursery:
                # Shielded before its first schedule point: only ``run`` cancels the body (one
                # cancel scope less than a shielded scope around the nursery; issue 24).
                nursery.cancel_scope.shield = True
                self._nursery = nursery
                if self.proxy is not None:  # listening before the first child looks for it
                    await nursery.start(self.proxy.supervise)
                nursery.start_soon(functools.partial(self.harness.supervise, rng=self.deps.rng))
                if self._after is not None:
                    self._after.attach(nursery)
                await self._loop(task_status)
                nursery.cancel_scope.cancel()  # stops the child's supervisor (a pending restart too)
        finally:
            self._nursery = None
            ended.set()

    async def _loop(self, task_status: trio.TaskStatus[None]) -> None:
        started = False
        async with self._inbox:  # closed on the way out: every request still waiting gets ActorGone
            try:
                while not self.core.finished:
                    msg: Message | None = None
                    deadline = self.core.next_deadline()
                    if deadline is None:  # no cancel scope open while idle (issue 24: bytes a session)
                        msg = await self._inbox.receive()
                    else:
                        with trio.move_on_at(deadline):
                            msg = await self._inbox.receive()
                    await self._take(msg)
                    await self._take_ready()
                    await self._publish()
                    if not started and self.core.settled:
                        task_status.started()
                        started = True
            except StorageFailed as exc:
                await self._storage_lost(exc)
            except Exception as exc:
                await self._abort(exc)
            finally:
                if not started:
                    task_status.started()
                self._replies.fail_all(SessionClosed(f"session {self.id} is {self.state}"))

    async def _take_ready(self) -> None:
        """Take the messages already waiting (at most ``_BATCH - 1`` more), so that one publish
        serves the whole batch."""
        for _ in range(_BATCH - 1):
            if self.core.finished:
                return
            try:
                msg = self._inbox.receive_nowait()
            except trio.WouldBlock:
                return
            await self._take(msg)

    async def _take(self, msg: Message | None) -> None:
        if isinstance(msg, LogBroken):
            raise msg.error
        if isinstance(msg, Announce):
            await self._perform([Emit(msg.event)])
            msg.reply.send(Empty())
            return
        if isinstance(msg, AfterResultReady):
            if self._after is not None:
                await self._perform([Emit(event) for event in self._after.take()])
            return
        if self._after is not None and self._starts_close(msg):
            await self._perform([Emit(event) for event in await self._after.settle()])
        if isinstance(msg, Call):
            msg = Request(call=self._replies.owe(msg.reply), request=msg.request, by=msg.by,
                          by_name=msg.by_name)
        outputs = self.core.receive(Tick() if msg is None else msg, trio.current_time())
        if self._after is not None and self.core.finished:
            await self._apply_ending(self._after, outputs)
        else:
            await self._apply(outputs)

    async def _apply_ending(self, after: AfterResults, outputs: list[Output]) -> None:
        """The outputs that end the session: a ``result`` among them, or one logged since the
        close began, gets its after-result run (settled, within the close's bound) before the
        ``exit``."""
        ending = next((i for i, out in enumerate(outputs)
                       if isinstance(out, Emit) and isinstance(out.event, Exit)), None)
        if ending is None:  # ended without an exit of its own (gave up after a crash's exit)
            await self._apply(outputs)
            return
        await self._perform(outputs[:ending])
        await self._apply([Emit(event) for event in await after.settle()] + outputs[ending:])

    async def _perform(self, outputs: list[Output]) -> None:
        await self._apply(outputs)
        await self._publish()

    async def _apply(self, outputs: list[Output]) -> None:
        """Perform ``outputs`` in order; the events appended are published (shown to the subscribers)
        before an answer and at the end of the batch (``_publish``)."""
        for out in outputs:
            match out:
                case Emit(event=event):
                    now = time.time()
                    self.log.append(event, now=now)
                    if self.deps.observer is not None:
                        meta = self.core.meta
                        self.deps.observer.observe(meta.id, meta.harness, meta.model, event, now)
                    if isinstance(event, Result) and self._after is not None:
                        self._after.result()
                case Write(gen=gen, data=data):
                    await self.harness.write(gen, data)
                case CloseChild(gen=gen, goodbye=goodbye):
                    self.harness.close(gen, goodbye)
                case RunWork(gen=gen, id=work_id, job=job):
                    self.harness.run_work(gen, work_id, job)
                case Answer(call=call, result=result, error=error):
                    await self._publish()
                    self._replies.pay(call, result, error)
                case SaveMeta(meta=meta):
                    await self._offload(functools.partial(write_meta, self.deps.directory, meta))

    async def _publish(self) -> None:
        """Wake the subscribers for what was appended and make it durable as the setting asks: with
        ``event`` the fsync comes first; with ``turn`` the clients are woken first (the lines are
        in the file already: a daemon crash loses nothing they saw) and the flusher fsyncs at once,
        off the loop: the next message is not held up by the disk. The flusher runs only while
        writes are pending (an idle session has no flusher task)."""
        if self.log.durability == "event":
            await self.log.commit()
        if self.log.last_seq != self._published:
            self._published = self.log.last_seq
            self.feed.appended()
        self.log.sync_soon()
        if self.log.flush_pending and not self._flushing and self._nursery is not None:
            self._flushing = True
            self._nursery.start_soon(self._flush)

    async def _tell(self, msg: Message) -> None:
        """Deliver a notice about the child without a schedule point while the inbox has room (a
        frame costs the forwarding task one step, not two); wait for room when it is full."""
        try:
            self._inbox.send_nowait(msg)
        except MailboxFull:
            await self._inbox.send(msg)

    async def _flush(self) -> None:
        try:
            await self.log.flush()
        except StorageFailed as exc:
            with contextlib.suppress(ActorGone):
                await self._inbox.send(LogBroken(exc))
        finally:
            self._flushing = False

    def _starts_close(self, msg: Call | Input | None) -> bool:
        """Whether ``msg`` makes a live session start to close (a second close does not)."""
        closes = isinstance(msg, Stop) or (isinstance(msg, Call) and isinstance(msg.request, SessionClose))
        return closes and self.core.allows("close")

    async def _after_result_ready(self) -> None:
        """A run of the after-result hook left an event: wake the loop to append it (``_take``).
        Never waits for the loop itself, which may be settling the runs before a close."""
        with contextlib.suppress(ActorGone):
            await self._tell(AfterResultReady())

    async def _stop(self, ended: trio.Event) -> None:
        with trio.move_on_after(self.close_bound):
            with contextlib.suppress(ActorGone):
                await self._inbox.send(Stop())
            await ended.wait()

    # --- endings --------------------------------------------------------------------------

    async def _abort(self, exc: Exception) -> None:
        """A bug: log it, and record it as an ``error`` event before the session ends failed."""
        log.exception("session %s failed", self.id)
        text = redact(f"{type(exc).__name__}: {exc}", frozenset(self.core.request.env.values()))
        try:
            await self._perform(self.core.receive(
                Abort(code="internal", message=f"the session failed: {text}"), trio.current_time()))
        except Exception:
            log.exception("session %s could not record its failure", self.id)
            await self._storage_lost(StorageFailed("the session could not record its failure"))

    async def _storage_lost(self, exc: StorageFailed) -> None:
        """The log takes no more events: the session ends failed; the daemon goes on."""
        log.error("session %s stopped: %s", self.id, exc)
        self._replies.fail_all(exc)
        for out in self.core.receive(StorageLost(message=exc.message), trio.current_time()):
            if isinstance(out, SaveMeta):
                with contextlib.suppress(StorageFailed):
                    await self._offload(functools.partial(write_meta, self.deps.directory, out.meta))

    async def _wind_up(self) -> None:
        """After the loop: log the end if it was not (a stop that overran), release everything."""
        if not self.core.finished:
            try:
                await self._perform(self.core.receive(Abandoned(), trio.current_time()))
            except StorageFailed as exc:
                await self._storage_lost(exc)
            except Exception:
                log.exception("session %s could not record its end", self.id)
        self._replies.fail_all(SessionClosed(f"session {self.id} is {self.state}"))
        self._inbox.close()
        if self._frame_log is not None:
            self._frame_log.close()
        try:
            await self._offload(self.log.close)
        except StorageFailed as exc:
            log.error("session %s: %s", self.id, exc)
        self.closed.set()
