"""The session actor: one harness child, its durable event log, its prompts and permissions.

Theory of operation
-------------------
A session runs three kinds of task in its own nursery:

* the **inbox loop** takes client requests (``session.prompt`` … ``session.close``) one at a
  time and answers each through a one-shot reply, so requests never interleave;
* the **harness loop** spawns the child from the driver's ``Launch``, feeds every stdout frame
  through the driver's translator, and, when the child dies without being asked to, restarts
  it under the restart policy (``exit`` → ``restarted`` → new child; too many → ``failed``);
* the **timer** wakes for the earliest deadline: permission timeouts and stall detection;
  plus the event log's flusher.

Every event goes through ``_emit``: it is appended to the log (gapless ``seq``) *before* the
feed wakes the subscription pumps, so nothing a client sees can be lost. State is derived from
the activity tracker (``running``/``waiting``/``idle``) unless a lifecycle state overrides it
(``starting``, ``restarting``, ``closing``, ``closed``, ``failed``).

Prompts: when no turn runs the prompt starts one; during a turn it is steered if the
translator can, else held; held prompts (and everything after them, to keep order) are sent
one per turn as turns end. Each prompt yields one ``user`` event when it reaches the harness.
Held prompts that never get there are listed in an ``error`` event.

Permissions: the policy answers what it can (``by: "policy"``); the rest wait for the first
client decision, a timeout (``timeout``), or the end of the turn/child/session
(``cancelled``). Every ``permission`` is followed by exactly one ``permission_decided``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections import deque
from pathlib import Path
from typing import Any, Literal

import msgspec
import trio

from actors.harness import Driver, HarnessRequest, Launch, Output, Send
from actors.session.eventlog import EventLog
from actors.session.feed import Feed
from actors.session.framelog import FrameLog
from actors.session.meta import SessionMeta, write_meta
from actors.session.approvals import Approvals
from actors.session.policy import Policy
from actors.session.tracker import Tracker
from protocol import events as ev
from protocol.errors import (
    ActorGone,
    BadRequest,
    CorralError,
    LaunchFailed,
    ProtocolError,
    SessionClosed,
    StorageFailed,
)
from protocol.events import Decision, Delivery, SessionState
from protocol.messages import (
    ClientRequest,
    Empty,
    PromptResult,
    SessionClose,
    SessionInterrupt,
    SessionPermission,
    SessionPrompt,
    SessionSetModel,
)
from protocol.models import SessionInfo
from supervisor.tree.backoff import Backoff, GiveUp, RestartPolicy, RestartTracker
from supervisor.tree.mailbox import Mailbox, Reply
from actors.session.config import SessionsConfig
from supervisor.proc.config import ChildrenConfig
from supervisor.proc.child import ExitStatus, ProcessSpec, open_child

__all__ = ["Session", "SessionDeps", "run_session"]

log = logging.getLogger("corral.session")

_LIFECYCLE: frozenset[str] = frozenset({"starting", "restarting", "closing", "closed", "failed"})
_REQUEST_TIMEOUT = 30.0


class SessionDeps(msgspec.Struct, frozen=True, kw_only=True):
    """What a session needs from the daemon: its driver, settings, ledger and directory."""

    driver: Any  # actors.harness.Driver; Any because Protocols are not msgspec types
    sessions: SessionsConfig
    children: ChildrenConfig
    ledger: Any  # supervisor.ledger.store.Ledger
    directory: Path


class Session:
    """The handle the daemon and connection actors hold; its methods are the session's API."""

    def __init__(self, meta: SessionMeta, request: HarnessRequest, deps: SessionDeps,
                 log: EventLog, frame_log: FrameLog | None = None) -> None:
        self.meta = meta
        self.request = request
        self.deps = deps
        self.driver: Driver = deps.driver
        self.log = log
        self.feed = Feed(log)
        self.approvals = Approvals(Policy(request.permissions), deps.sessions.permission_timeout)
        self.tracker = Tracker(stall_threshold=deps.sessions.stall_threshold, now=trio.current_time())
        self.lifecycle: str | None = "starting"
        self.pid: int | None = None
        self.restarts = meta.restarts
        self.held: deque[str] = deque()
        self.turn_started_at: float | None = None
        self.closed = trio.Event()
        self._inbox: Mailbox[_Call] = Mailbox(deps.sessions.inbox_size, name=f"session {meta.id}")
        self._child: Any = None
        self._translator: Any = None
        self._send_lock = trio.Lock()
        self._wake = trio.Event()
        self._closing = False
        self._announced_state: str | None = None
        self._first_spawn = trio.Event()
        self.started = False
        self._frame_log = frame_log

    # --- the API the daemon calls --------------------------------------------------------

    @property
    def id(self) -> str:
        return self.meta.id

    @property
    def state(self) -> SessionState:
        state = self.lifecycle or self.tracker.state
        return state  # type: ignore[return-value]

    def info(self) -> SessionInfo:
        """A snapshot for ``session.get``/``session.list``."""
        return SessionInfo(
            id=self.meta.id, name=self.meta.name, harness=self.meta.harness, cwd=self.meta.cwd,
            model=self.meta.model, state=self.state, created_at=self.meta.created_at,
            last_seq=self.log.last_seq, restarts=self.restarts, pid=self.pid,
            vendor_session_id=self.meta.vendor_session_id,
        )

    async def call(self, request: ClientRequest, by: str) -> msgspec.Struct:
        """Serve a session request from connection ``by``; typed errors, never a hang."""
        timeout = _REQUEST_TIMEOUT
        if isinstance(request, SessionClose):
            if self.state in ("closed", "failed"):
                return Empty()
            timeout = self.deps.sessions.close_timeout + _REQUEST_TIMEOUT
        try:
            result: msgspec.Struct = await self._inbox.request(
                lambda reply: _Call(request, by, reply), timeout=timeout)
        except ActorGone:
            if isinstance(request, SessionClose):
                await self.closed.wait()
                return Empty()
            raise SessionClosed(f"session {self.id} is {self.state}") from None
        return result

    async def prompt(self, text: str, by: str) -> Delivery:
        """Send a prompt (the registry's ``session.create {prompt}``)."""
        result = await self.call(SessionPrompt(id=0, session_id=self.id, text=text), by)
        return result.delivery  # type: ignore[attr-defined, no-any-return]

    async def close(self, by: str) -> None:
        """Run the close sequence and return once the session has ended."""
        await self.call(SessionClose(id=0, session_id=self.id), by)
        await self.closed.wait()

    # --- the actor ------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED) -> None:
        """Run until closed or failed. Cancelling it kills the child (bounded) and marks it closed."""
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.log.run_flusher)
                nursery.start_soon(self._timer)
                nursery.start_soon(self._harness_loop, nursery.cancel_scope)
                # "Started" means the first child was spawned (or failed to), so a new session
                # is already idle when its creator hears of it.
                await self._first_spawn.wait()
                task_status.started(self)
                self.started = True
                await self._inbox_loop(nursery.cancel_scope)
        except* StorageFailed as group:
            # The log cannot take events (a full disk): nothing more can be promised to clients,
            # so the session ends here; its child is closed on the way out, the daemon goes on.
            log.error("session %s stopped: %s", self.id, group.exceptions[0])
            self.lifecycle = "failed"
            self.meta = msgspec.structs.replace(self.meta, state="failed", closed_reason="storage_failed")
            with contextlib.suppress(StorageFailed):
                write_meta(self.deps.directory, self.meta)
        finally:
            with trio.CancelScope(shield=True):
                with contextlib.suppress(StorageFailed):
                    self._finish_if_cancelled()
                    self.log.sync()
                self._inbox.close()
                if self._frame_log is not None:
                    self._frame_log.close()
                self.closed.set()

    async def _inbox_loop(self, scope: trio.CancelScope) -> None:
        async with self._inbox:
            async for call in self._inbox:
                try:
                    call.reply.send(await self._handle(call.request, call.by))
                except StorageFailed as exc:
                    call.reply.fail(exc)
                    raise  # the log cannot take events: the session ends (see run)
                except CorralError as exc:
                    call.reply.fail(exc)
                if self.state in ("closed", "failed"):
                    break
        scope.cancel()

    async def _handle(self, request: ClientRequest, by: str) -> msgspec.Struct:
        if self.state in ("closed", "failed") or self._closing:
            raise SessionClosed(f"session {self.id} is {self.state}")
        match request:
            case SessionPrompt(text=text):
                return PromptResult(delivery=await self._prompt(text))
            case SessionInterrupt():
                await self._interrupt()
            case SessionPermission(permission_id=pid, decision=decision):
                await self._decide(pid, decision, by)
            case SessionSetModel(model=model):
                await self._set_model(model)
            case SessionClose():
                await self._close()
            case _:
                raise BadRequest(f"{type(request).__name__} is not a session request")
        return Empty()

    async def _prompt(self, text: str) -> Delivery:
        ready = self._child is not None and self._translator is not None and self._translator.ready
        if ready and not self.held and self.lifecycle is None and not self.tracker.turn_running \
                and not self.approvals:
            await self._start_turn(text, "prompted")
            return "prompted"
        if ready and not self.held and self.lifecycle is None:
            frames = self._translator.steer(text, self._now())
            if frames is not None:
                self._emit(ev.User(text=text, delivery="steered"))
                await self._handle_outputs(frames)
                return "steered"
        self.held.append(text)
        return "held"

    async def _start_turn(self, text: str, delivery: Delivery) -> None:
        self.tracker.turn_started(trio.current_time())
        self._wake_timer()
        self.turn_started_at = trio.current_time()
        self._emit(ev.User(text=text, delivery=delivery))
        await self._handle_outputs(self._translator.prompt(text, self._now()))

    async def _release_held(self) -> None:
        """Send the next held prompt if the harness is free (called when a turn ends or a child is ready)."""
        if (self.held and self._child is not None and self._translator is not None
                and self._translator.ready and self.lifecycle is None
                and not self.tracker.turn_running and not self.approvals):
            await self._start_turn(self.held.popleft(), "held")

    async def _interrupt(self) -> None:
        self._cancel_permissions()
        if self._child is not None and self._translator is not None and self.tracker.turn_running:
            await self._handle_outputs(self._translator.interrupt(self._now()))

    async def _decide(self, permission_id: str, decision: Decision, by: str) -> None:
        self.approvals.check(permission_id, decision)
        await self._answer(permission_id, decision, by)

    async def _answer(self, permission_id: str, decision: Literal["allow", "deny", "allow_always", "timeout"], by: str) -> None:
        self.approvals.settle(permission_id)
        self._emit(ev.PermissionDecided(permission_id=permission_id, decision=decision, by=by))
        if self._translator is not None and self._child is not None:
            wire: Decision = "deny" if decision == "timeout" else decision
            await self._handle_outputs(self._translator.decide(permission_id, wire, self._now()))

    async def _set_model(self, model: str) -> None:
        if self._translator is not None and self._child is not None:
            await self._handle_outputs(self._translator.set_model(model, self._now()))
        self.request = msgspec.structs.replace(self.request, model=model)
        self._save_meta(model=model)

    async def _close(self) -> None:
        self._closing = True
        self._set_lifecycle("closing")
        self._cancel_permissions()
        child, translator = self._child, self._translator
        status: ExitStatus | None = None
        if child is not None:
            # The child's own close sequence is bounded by close_timeout; the margin covers the
            # SIGKILL at its end and the reap, so the exit status is known when we report it.
            with trio.move_on_after(self.deps.sessions.close_timeout + 5):
                goodbye = translator.goodbye(self._now()) if translator is not None else []
                status = await child.close(goodbye=_goodbye(goodbye))
        self.pid = None  # a closed session reports no child, before and after it leaves ``live``
        self._report_lost_prompts("the session was closed")
        self._emit(ev.Exit(exit_code=status.exit_code if status else None,
                           signal=status.signal if status else None, reason="closed"))
        self._set_lifecycle("closed")
        self._save_meta(closed_reason="closed")

    # --- the harness child ----------------------------------------------------------------

    async def _harness_loop(self, scope: trio.CancelScope) -> None:
        sessions = self.deps.sessions
        restarts = RestartTracker(RestartPolicy(
            intensity=sessions.restart_intensity, period=sessions.restart_period,
            backoff=Backoff(initial=sessions.backoff_initial, factor=sessions.backoff_factor,
                            max=sessions.backoff_max, jitter=sessions.backoff_jitter),
        ))
        while not self._closing:
            status, reason = await self._run_child()
            if self._closing_requested():
                return
            self._child_gone()
            self._emit(ev.Exit(exit_code=status.exit_code if status else None,
                               signal=status.signal if status else None, reason="crashed"))
            decision = restarts.next(trio.current_time())
            if isinstance(decision, GiveUp):
                self._fail(f"the harness crashed more than {sessions.restart_intensity} times "
                           f"in {sessions.restart_period:g} s (last: {reason})")
                self._wake_inbox()
                return
            self._set_lifecycle("restarting")
            await trio.sleep(decision.delay)
            if self._closing_requested():
                return
            self.restarts += 1
            self._save_meta(restarts=self.restarts)
            self._emit(ev.Restarted(attempt=self.restarts, reason=reason))

    async def _run_child(self) -> tuple[ExitStatus | None, str]:
        """Run one child to its end; returns its exit status and a reason for a restart."""
        request = msgspec.structs.replace(self.request, resume=self.meta.vendor_session_id or self.request.resume)
        translator = self.driver.translator(request)
        try:
            launch = self.driver.launch(request)
            spec = self._process_spec(launch)
            async with open_child(spec, ledger=self.deps.ledger) as child:
                self._child, self._translator, self.pid = child, translator, child.pid
                self.tracker.reset(trio.current_time())
                self._set_lifecycle(None if translator.ready else "starting")
                await self._handle_outputs(translator.start(self._now()))
                self._first_spawn.set()
                await self._release_held()
                try:
                    async for frame in child.frames():
                        await self._on_frame(frame)
                except (ProtocolError, CorralError) as exc:
                    self._emit(ev.Error(error_class="protocol", code=str(exc.code), message=exc.message))
                    await child.close()
                    return await child.wait(), exc.message
                status: ExitStatus = await child.wait()
                return status, _describe(status)
        except LaunchFailed as exc:
            self._emit(ev.Error(error_class="launch", code=str(exc.code), message=exc.message))
            return None, exc.message
        finally:
            self._first_spawn.set()

    def _process_spec(self, launch: Launch) -> ProcessSpec:
        for name, content in launch.files.items():
            path = Path(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(content)
        return ProcessSpec(
            key=f"session:{self.id}:{self.restarts}", kind=f"harness:{self.meta.harness}", argv=launch.argv,
            cwd=launch.cwd, env=launch.env, shutdown=self.deps.sessions.close_timeout,
            frame_limit=self.deps.children.frame_limit, framing=launch.framing,
            stderr_lines=self.deps.children.stderr_lines,
            secrets=frozenset(self.request.env.values()),
        )

    async def _on_frame(self, frame: bytes) -> None:
        if self._frame_log is not None:
            self._frame_log.record("in", frame, self.pid)
        try:
            outputs = self._translator.receive(frame, self._now())
        except ProtocolError as exc:
            self._emit(ev.Error(error_class="protocol", code=str(exc.code), message=exc.message))
            return
        was_ready = self.lifecycle == "starting" and self._translator.ready
        await self._handle_outputs(outputs)
        if was_ready:
            self._set_lifecycle(None)
            await self._release_held()

    async def _handle_outputs(self, outputs: list[Output]) -> None:
        for out in outputs:
            if isinstance(out, Send):
                await self._write(out.data)
            else:
                await self._on_event(out)

    async def _write(self, data: bytes) -> None:
        child = self._child
        if child is None:
            return
        if self._frame_log is not None:
            self._frame_log.record("out", data.rstrip(b"\n"), self.pid)
        async with self._send_lock:
            try:
                await child.send(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, CorralError):
                pass  # the child is gone; the harness loop sees its exit

    async def _on_event(self, event: ev.Event) -> None:
        match event:
            case ev.Permission(permission_id=pid):
                self._emit(event)
                decision = self.approvals.open(event, trio.current_time())
                if decision is not None:
                    await self._answer(pid, decision, "policy")
                else:
                    self._wake_timer()
            case ev.Result():
                if event.duration_ms is None and self.turn_started_at is not None:
                    event = msgspec.structs.replace(
                        event, duration_ms=round((trio.current_time() - self.turn_started_at) * 1000))
                self._cancel_permissions()
                self._emit(event)
                self.turn_started_at = None
                await self._release_held()
            case ev.PermissionDecided(permission_id=pid):
                # The harness withdrew an open request itself: reported once; repeats and
                # requests the session already decided are dropped.
                if self.approvals.settle(pid):
                    self._emit(event)
            case ev.Init(vendor_session_id=vid, model=model):
                self._emit(event)
                changes: dict[str, Any] = {}
                if vid and vid != self.meta.vendor_session_id:
                    changes["vendor_session_id"] = vid
                if model and self.meta.model is None:
                    changes["model"] = model  # the harness's default, as it reported it
                if changes:
                    self._save_meta(**changes)
            case _:
                self._emit(event)

    # --- events, state, meta --------------------------------------------------------------

    def _emit(self, event: ev.Event) -> None:
        """Append ``event`` to the log, fold it into the tracker, then wake the subscribers."""
        self.log.append(event, now=time.time())
        self.tracker.observe(event, trio.current_time())
        self.feed.appended()
        self._announce_state()
        self._wake_timer()  # the stall deadline moves with every event

    def _announce_state(self) -> None:
        state = self.state
        if state != self._announced_state:
            self._announced_state = state
            self.log.append(ev.Status(state=state, stalled=self.tracker.stalled), now=time.time())
            self.feed.appended()

    def _set_lifecycle(self, lifecycle: str | None) -> None:
        self.lifecycle = lifecycle
        self._announce_state()
        self._wake_timer()

    def _save_meta(self, **changes: Any) -> None:
        self.meta = msgspec.structs.replace(self.meta, state=self.state, **changes)
        write_meta(self.deps.directory, self.meta)

    def _child_gone(self) -> None:
        self._child = self._translator = None
        self.pid = None
        self._cancel_permissions()
        self.tracker.reset(trio.current_time())
        self.turn_started_at = None

    def _cancel_permissions(self) -> None:
        for pid in self.approvals.open_ids():
            self.approvals.settle(pid)
            self._emit(ev.PermissionDecided(permission_id=pid, decision="cancelled", by="session"))

    def _report_lost_prompts(self, why: str) -> None:
        if self.held:
            lost = list(self.held)
            self.held.clear()
            self._emit(ev.Error(error_class="unknown", code="prompts_not_delivered",
                                message=f"{why}; {len(lost)} held prompt(s) never reached the "
                                        f"harness: {lost!r}"))

    def _fail(self, message: str) -> None:
        self._emit(ev.Error(error_class="launch", code="restart_intensity", message=message))
        self._report_lost_prompts("the session failed")
        self._set_lifecycle("failed")
        self._save_meta(closed_reason="failed")

    def _finish_if_cancelled(self) -> None:
        """The actor was cancelled from outside (daemon shutdown): leave a closed, consistent log."""
        if self.state in ("closed", "failed"):
            return
        self._cancel_permissions()
        self._report_lost_prompts("the daemon stopped")
        self._emit(ev.Exit(reason="closed"))
        self._set_lifecycle("closed")
        self._save_meta(closed_reason="daemon_stopped")

    # --- timers ---------------------------------------------------------------------------

    async def _timer(self) -> None:
        while True:
            deadlines = [d for d in (self.approvals.next_deadline(),) if d is not None]
            stall = self.tracker.stall_deadline()
            if stall is not None and not self.tracker.stalled:
                deadlines.append(stall)
            wake = self._wake = trio.Event()
            with trio.move_on_at(min(deadlines, default=math.inf)):
                await wake.wait()
            now = trio.current_time()
            for pid in self.approvals.expired(now):
                await self._answer(pid, "timeout", "session")
            changed = self.tracker.check_stall(now)
            if changed is not None:
                self._emit(ev.Status(state=self.state, stalled=changed))

    def _wake_timer(self) -> None:
        self._wake.set()

    def _closing_requested(self) -> bool:
        return self._closing

    def _wake_inbox(self) -> None:
        self._inbox.close()

    @staticmethod
    def _now() -> float:
        return trio.current_time()


class _Call(msgspec.Struct, frozen=True):
    """A client request in the session's inbox, with its one-shot reply."""

    request: ClientRequest
    by: str
    reply: Reply[msgspec.Struct]


def _goodbye(frames: list[Output]) -> Any:
    if not frames:
        return None

    async def send(child: Any) -> None:
        for out in frames:
            if isinstance(out, Send):
                await child.send(out.data)

    return send


def _describe(status: ExitStatus) -> str:
    if status.signal:
        return f"killed by {status.signal}"
    return f"exited with status {status.exit_code}"


async def run_session(session: Session, *, task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED) -> None:
    """Start-function shape for a supervisor child spec."""
    await session.run(task_status=task_status)
