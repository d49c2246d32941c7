"""The session core: every decision a session takes, without I/O, trio or a clock (sans-IO).

Theory of operation
-------------------
``receive(input, now)`` takes one input (``actors.session.messages``: a client request, a notice
about the harness child, the supervisor giving up, a stop, a tick) and returns the outputs in the
order the shell must perform them: events to append, frames for a child, a polite close of a
child, answers to requests, metadata to save. Time comes in as ``now`` (trio's clock); the shell
wakes the core at ``next_deadline()`` with a ``Tick``. Spawning and restarting are not decided
here: the harness child runs under a supervisor of the tree, whose restart planner decides when
the next generation starts or that there will be none (``GaveUp``). The core hears of each
generation when it is spawned (or failed to be) and of its exit.

**Generations.** Each spawn attempt has a new generation number. Only the current generation's
notices are acted on; a frame or exit of a dead generation still queued behind newer news is
dropped. Every ``Write`` carries the generation whose translator produced it, and the shell
delivers it to that generation only, so a restarted child never receives a frame the dead
translator produced. The same holds for client-side jobs (``actors.harness``): a translator's
``Work`` becomes ``RunWork`` for its generation, and a ``WorkDone`` of a dead one is dropped.

**States.** ``lifecycle`` overrides the activity the tracker derives (``idle``, ``running``,
``waiting``) and is ``None`` while a ready child runs:

=========== ========================== ======================================================
lifecycle   input                      effect
=========== ========================== ======================================================
starting,   spawned(g)                 (``restarted`` if a crash came before) g's translator
restarting                             starts; ``starting`` until it is ready, then activity
            spawn_failed(g)            ``error {launch}``, ``exit {crashed}`` → restarting
            gave_up                    ``error {restart_intensity}`` → failed
None        child exited, unasked      open permissions ``cancelled``; a running turn ends with
(activity)                             ``error {harness_crashed}`` + ``result {is_error}``;
                                       ``exit {crashed}`` → restarting
any live    close, stop                → closing; open permissions ``cancelled``; the child
                                       gets ``CloseChild`` with the translator's goodbye, or,
                                       with no child running, the close ends at once
closing     child exited               a running turn ends ``result {interrupted}``; held
                                       prompts reported; ``exit {closed}`` → closed; every
                                       close request answered
closing     permission from the child  decided ``cancelled`` at once
any live    abort (a bug)              ``error {code}``; open permissions cancelled, the turn
                                       ends, ``exit {killed}`` → failed
any live    abandoned                  as ``closing`` + exited with no status
closed,     anything                   requests get ``session_closed`` (close gets ``ok``)
failed
=========== ========================== ======================================================

So every ``permission`` is followed by exactly one ``permission_decided`` before the ``exit`` of
the child that asked, and every turn a prompt started ends with a ``result`` before that exit.

**Prompts.** With a ready child, no held prompt, no turn and no open permission, a prompt starts a
turn (``prompted``); during a turn it is steered if the translator can; otherwise it is held and
sent, one per turn, when the harness is free again (``actors.session.prompts``). Each prompt
yields one ``user`` event when it reaches the harness.

**Permissions.** The policy answers what it can (``by: "policy"``); the rest wait for the first
client, the permission timeout (``timeout``, sent to the harness as ``deny``), or the end of the
turn, child or session (``cancelled``). Bookkeeping: ``actors.session.approvals``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal

import msgspec

from actors.harness import Driver, HarnessRequest, Send, Translator, Work, WorkOutput
from actors.session.approvals import Approvals
from actors.session.messages import (
    Abandoned,
    Abort,
    Answer,
    ChildBroken,
    ChildExited,
    ChildFrame,
    ChildSpawned,
    ChildSpawnFailed,
    CloseChild,
    Emit,
    GaveUp,
    Input,
    Output,
    Request,
    RunWork,
    SaveMeta,
    Stop,
    StorageLost,
    Tick,
    WorkDone,
    Write,
)
from actors.session.meta import SessionMeta
from actors.session.policy import Policy
from actors.session.prompts import PromptQueue
from actors.session.tracker import Tracker
from protocol import events as ev
from protocol.errors import (
    BadRequest, CorralError, ProtocolError, SessionBusy, SessionClosed, Unsupported,
)
from protocol.events import Decision, Delivery, SessionState
from protocol.messages import (
    Empty,
    PromptResult,
    SessionClose,
    SessionCompact,
    SessionInterrupt,
    SessionPermission,
    SessionPrompt,
    SessionSetModel,
)
from protocol.models import SessionInfo
from actors.session.config import SessionsConfig
from supervisor.proc.spec import ExitStatus

__all__ = ["SessionCore", "describe_exit"]

Lifecycle = Literal["starting", "restarting", "closing", "closed", "failed"]
_FINAL: Final = ("closed", "failed")


class SessionCore:
    """One session's state and decisions; feed it with ``receive`` (see the module docstring)."""

    def __init__(self, meta: SessionMeta, request: HarnessRequest, driver: Driver,
                 settings: SessionsConfig, *, now: float, resumed: bool = False) -> None:
        self.meta = meta
        self.request = request
        self.driver = driver
        self.settings = settings
        self.approvals = Approvals(Policy(request.permissions), settings.permission_timeout)
        self.tracker = Tracker(stall_threshold=settings.stall_threshold, now=now)
        self.prompts = PromptQueue()
        self.lifecycle: Lifecycle | None = "starting"
        self.restarts = meta.restarts
        self.pid: int | None = None
        self.settled = False
        """Whether the first child generation was heard of (spawned, or failed to be)."""
        self._gen = 0
        self._translator: Translator | None = None
        # A resumed session's first generation is announced as ``restarted {reason: "resumed"}``.
        self._restart_due = resumed
        self._last_crash = "resumed" if resumed else "unknown"
        self._broken: str | None = None
        self._turn_started_at: float | None = None
        self._closers: list[int] = []
        self._closed_reason = "closed"
        self._announced: SessionState | None = None
        self._now = now
        self._out: list[Output] = []

    # --- reading ------------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        """The state clients see: the lifecycle, else the tracker's activity."""
        state = self.lifecycle or self.tracker.state
        return state  # type: ignore[return-value]

    @property
    def finished(self) -> bool:
        """Whether the session ended (``closed`` or ``failed``): nothing more will happen."""
        return self.lifecycle in _FINAL

    @property
    def generation(self) -> int:
        """The generation of the child the core listens to (0 before the first)."""
        return self._gen

    def child_request(self) -> HarnessRequest:
        """What the next child generation is launched from: the request with today's model and
        the vendor session to resume (once the harness has named one)."""
        return msgspec.structs.replace(self.request, resume=self.meta.vendor_session_id or self.request.resume)

    def next_deadline(self) -> float | None:
        """When the core wants a ``Tick``: a permission timeout or the stall threshold."""
        if self.finished:
            return None
        deadlines = [self.approvals.next_deadline()]
        if not self.tracker.stalled:
            deadlines.append(self.tracker.stall_deadline())
        return min((d for d in deadlines if d is not None), default=None)

    def info(self, last_seq: int) -> SessionInfo:
        """A snapshot for ``session.get``/``session.list``."""
        meta = self.meta
        return SessionInfo(
            id=meta.id, name=meta.name, harness=meta.harness, cwd=meta.cwd, model=meta.model,
            state=self.state, created_at=meta.created_at, last_seq=last_seq,
            restarts=self.restarts, pid=self.pid, vendor_session_id=meta.vendor_session_id,
        )

    # --- the one entry point -----------------------------------------------------------

    def receive(self, msg: Input, now: float) -> list[Output]:
        """Take one input at time ``now``; return what to do, in order.

        Raises only on a bug (of the core or a translator); the shell then feeds ``Abort``,
        which gets the outputs decided before the failure too.
        """
        self._now = now
        match msg:
            case Request():
                self._on_request(msg)
            case ChildSpawned():
                self._on_spawned(msg)
            case ChildSpawnFailed(gen=gen, code=code, message=message):
                self._on_spawn_failed(gen, code, message)
            case ChildFrame(gen=gen, data=data):
                if self._is_current(gen):
                    self._on_frame(data)
            case ChildBroken(gen=gen, code=code, message=message):
                if self._is_current(gen):
                    self._emit(ev.Error(error_class="protocol", code=code, message=message))
                    self._broken = message
            case ChildExited(gen=gen, status=status):
                if self._is_current(gen):
                    self._on_exited(status)
            case WorkDone(gen=gen, id=work_id, outcome=outcome):
                if self._is_current(gen):
                    # a translator that hands out ``Work`` has ``finished`` (actors.harness)
                    finished = getattr(self._translator, "finished")
                    self._outputs(finished(work_id, outcome, now))
            case GaveUp():
                self._on_gave_up()
            case Stop():
                if not self.finished and self.lifecycle != "closing":
                    self._begin_close("daemon_stopped")
            case Abandoned():
                self._on_abandoned()
            case Abort(code=code, message=message):
                self._on_abort(code, message)
            case StorageLost():
                self._on_storage_lost()
            case Tick():
                pass
        if not self.finished:
            self._check_timers()
            self._release_held()
        out, self._out = self._out, []
        return out

    # --- requests -----------------------------------------------------------------------

    def _on_request(self, msg: Request) -> None:
        try:
            result = self._serve(msg)
        except CorralError as exc:
            self._out.append(Answer(call=msg.call, error=exc))
            return
        if result is not None:
            self._out.append(Answer(call=msg.call, result=result))

    def _serve(self, msg: Request) -> msgspec.Struct | None:
        """The result of a request, or ``None`` when the answer comes later (a close)."""
        request = msg.request
        if self.finished or self.lifecycle == "closing":
            if not isinstance(request, SessionClose):
                raise SessionClosed(f"session {self.meta.id} is {self.state}")
            if self.finished:
                return Empty()
            self._closers.append(msg.call)
            return None
        match request:
            case SessionPrompt(text=text):
                return PromptResult(delivery=self._prompt(text))
            case SessionInterrupt():
                self._cancel_permissions()
                if self._translator is not None and self.tracker.turn_running:
                    self._outputs(self._translator.interrupt(self._now))
            case SessionPermission(permission_id=pid, decision=decision):
                self.approvals.check(pid, decision)
                self._decide(pid, decision, msg.by)
            case SessionSetModel(model=model):
                if self._translator is not None:
                    self._outputs(self._translator.set_model(model, self._now))
                self.request = msgspec.structs.replace(self.request, model=model)
                self._save_meta(model=model)
            case SessionClose():
                self._closers.append(msg.call)
                self._begin_close("closed")
                return None
            case SessionCompact():
                self._compact()
            case _:
                raise BadRequest(f"{type(request).__name__} is not a session request")
        return Empty()

    def _compact(self) -> None:
        """``session.compact``: only translators with a ``compact`` method can; only when idle."""
        translator = self._translator
        compact = getattr(translator, "compact", None)
        if translator is not None and compact is None:
            raise Unsupported(f"the {self.meta.harness} harness cannot compact a session")
        if (translator is None or compact is None or not translator.ready
                or self.lifecycle is not None or self.tracker.turn_running or self.approvals
                or self.prompts):
            raise SessionBusy(f"session {self.meta.id} is {self.state}: compact it when idle")
        self._outputs(compact(self._now))

    def _prompt(self, text: str) -> Delivery:
        translator = self._translator
        if translator is not None and translator.ready and self.lifecycle is None and not self.prompts:
            if not self.tracker.turn_running and not self.approvals:
                self._start_turn(translator, text, "prompted")
                return "prompted"
            frames = translator.steer(text, self._now)
            if frames is not None:
                self._emit(ev.User(text=text, delivery="steered"))
                self._outputs(frames)
                return "steered"
        self.prompts.hold(text)
        return "held"

    def _start_turn(self, translator: Translator, text: str, delivery: Delivery) -> None:
        frames = translator.prompt(text, self._now)  # may refuse (session_busy) before anything happened
        self.tracker.turn_started(self._now)
        self._turn_started_at = self._now
        self._emit(ev.User(text=text, delivery=delivery))
        self._outputs(frames)

    def _release_held(self) -> None:
        """Send the oldest held prompt if the harness is free (checked after every input)."""
        translator = self._translator
        if (not self.prompts or translator is None or not translator.ready or self.lifecycle is not None
                or self.tracker.turn_running or self.approvals):
            return
        text = self.prompts.next()
        try:
            self._start_turn(translator, text, "held")
        except CorralError:
            self.prompts.put_back(text)

    def _decide(self, permission_id: str, decision: Literal["allow", "deny", "allow_always", "timeout"],
                by: str) -> None:
        self.approvals.settle(permission_id)
        self._emit(ev.PermissionDecided(permission_id=permission_id, decision=decision, by=by))
        if self._translator is not None:
            wire: Decision = "deny" if decision == "timeout" else decision
            self._outputs(self._translator.decide(permission_id, wire, self._now))

    def _cancel_permissions(self) -> None:
        for pid in self.approvals.open_ids():
            self.approvals.settle(pid)
            self._emit(ev.PermissionDecided(permission_id=pid, decision="cancelled", by="session"))

    # --- the child ----------------------------------------------------------------------

    def _is_current(self, gen: int) -> bool:
        return gen == self._gen and self._translator is not None

    def _on_spawned(self, msg: ChildSpawned) -> None:
        if msg.gen <= self._gen:
            return
        if self.finished:
            self._out.append(CloseChild(gen=msg.gen))  # too late: the session has ended
            return
        self._new_generation(msg.gen)
        translator = self.driver.translator(msg.request)
        self._translator, self.pid = translator, msg.pid
        self.tracker.reset(self._now)
        self._set_lifecycle(None if translator.ready else "starting")
        self._outputs(translator.start(self._now))

    def _on_spawn_failed(self, gen: int, code: str, message: str) -> None:
        if gen <= self._gen or self.finished:
            return
        self._new_generation(gen)
        self._emit(ev.Error(error_class="launch", code=code, message=message))
        self._emit(ev.Exit(reason="crashed"))
        self._crashed(message)

    def _new_generation(self, gen: int) -> None:
        self._gen = gen
        self.settled = True
        if self._restart_due:
            self._restart_due = False
            self.restarts += 1
            self._save_meta(restarts=self.restarts)
            self._emit(ev.Restarted(attempt=self.restarts, reason=self._last_crash))

    def _on_frame(self, data: bytes) -> None:
        translator = self._translator
        if translator is None:
            return
        try:
            outputs = translator.receive(data, self._now)
        except ProtocolError as exc:
            self._emit(ev.Error(error_class="protocol", code=str(exc.code), message=exc.message))
            return
        became_ready = self.lifecycle == "starting" and translator.ready
        self._outputs(outputs)
        if became_ready and self.lifecycle == "starting":
            self._set_lifecycle(None)

    def _on_exited(self, status: ExitStatus | None) -> None:
        if self.lifecycle == "closing":
            self._finish_close(status)
            return
        reason = self._broken or (describe_exit(status) if status is not None else "ended")
        self._cancel_permissions()
        if self.tracker.turn_running:
            self._emit(ev.Error(error_class="unknown", code="harness_crashed",
                                message=f"the harness child ended during the turn ({reason})"))
            self._emit(self._complete(ev.Result(stop_reason="error", is_error=True)))
        self._child_gone()
        self._emit(_exit(status, "crashed"))
        self._crashed(reason)

    def _crashed(self, reason: str) -> None:
        self._restart_due = True
        self._last_crash = reason
        self._set_lifecycle("restarting")

    def _child_gone(self) -> None:
        self._translator = None
        self.pid = None
        self._broken = None
        self._turn_started_at = None
        self.tracker.reset(self._now)

    def _on_gave_up(self) -> None:
        if self.finished or self.lifecycle == "closing":
            return
        settings = self.settings
        self._emit(ev.Error(error_class="launch", code="restart_intensity",
                            message=f"the harness crashed more than {settings.restart_intensity} times "
                                    f"in {settings.restart_period:g} s (last: {self._last_crash})"))
        self._report_lost("the session failed")
        self._end("failed", "failed")

    # --- the end ------------------------------------------------------------------------

    def _begin_close(self, reason: str) -> None:
        self._closed_reason = reason
        self._set_lifecycle("closing")
        self._cancel_permissions()
        translator = self._translator
        if translator is None:
            self._finish_close(None)
            return
        goodbye: list[bytes] = []
        for out in translator.goodbye(self._now):
            if isinstance(out, Send):
                goodbye.append(out.data)
            elif not isinstance(out, Work):  # no job starts in a close
                self._on_event(out)
        self._out.append(CloseChild(gen=self._gen, goodbye=tuple(goodbye)))

    def _finish_close(self, status: ExitStatus | None) -> None:
        self._cancel_permissions()
        if self.tracker.turn_running:
            self._emit(self._complete(ev.Result(stop_reason="interrupted")))
        self._report_lost("the daemon stopped" if self._closed_reason == "daemon_stopped"
                          else "the session was closed")
        self._child_gone()
        self._emit(_exit(status, "closed"))
        self._end("closed", self._closed_reason)

    def _on_abandoned(self) -> None:
        if self.finished:
            return
        if self.lifecycle != "closing":
            self._closed_reason = "daemon_stopped"
            self._set_lifecycle("closing")
        self._finish_close(None)

    def _on_abort(self, code: str, message: str) -> None:
        if self.finished:
            return
        self._emit(ev.Error(error_class="unknown", code=code, message=message))
        self._cancel_permissions()
        if self.tracker.turn_running:
            self._emit(self._complete(ev.Result(stop_reason="error", is_error=True)))
        self._report_lost("the session failed")
        if self._translator is not None:
            self._child_gone()
            self._emit(ev.Exit(reason="killed"))
        self._end("failed", "internal_error")

    def _on_storage_lost(self) -> None:
        if self.finished:
            return
        self.lifecycle = "failed"  # announced nowhere: the log takes no more events
        self._child_gone()
        self.meta = msgspec.structs.replace(self.meta, state="failed", closed_reason="storage_failed")
        self._out.append(SaveMeta(self.meta))

    def _report_lost(self, why: str) -> None:
        lost = self.prompts.lost(why)
        if lost is not None:
            self._emit(lost)

    def _end(self, lifecycle: Literal["closed", "failed"], closed_reason: str) -> None:
        self._set_lifecycle(lifecycle)
        self._save_meta(closed_reason=closed_reason)
        for call in self._closers:
            self._out.append(Answer(call=call, result=Empty()))
        self._closers.clear()

    # --- harness output ------------------------------------------------------------------

    def _outputs(self, outputs: Sequence[WorkOutput]) -> None:
        """A translator's outputs: frames and jobs for its own generation, events into the session."""
        for out in outputs:
            if isinstance(out, Send):
                self._out.append(Write(gen=self._gen, data=out.data))
            elif isinstance(out, Work):
                self._out.append(RunWork(gen=self._gen, id=out.id, job=out.job))
            else:
                self._on_event(out)

    def _on_event(self, event: ev.Event) -> None:
        match event:
            case ev.Permission(permission_id=pid):
                self._emit(event)
                if self.lifecycle == "closing":
                    self.approvals.settle(pid)
                    self._emit(ev.PermissionDecided(permission_id=pid, decision="cancelled", by="session"))
                    return
                decision = self.approvals.open(event, self._now)
                if decision is not None:
                    self._decide(pid, decision, "policy")
            case ev.Result():
                self._cancel_permissions()
                self._emit(self._complete(event))
                self._turn_started_at = None
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

    def _complete(self, result: ev.Result) -> ev.Result:
        """``result`` with the turn's duration measured here when the harness gave none."""
        if result.duration_ms is None and self._turn_started_at is not None:
            return msgspec.structs.replace(
                result, duration_ms=round((self._now - self._turn_started_at) * 1000))
        return result

    # --- events, state, timers -------------------------------------------------------------

    def _emit(self, event: ev.Event) -> None:
        self._out.append(Emit(event))
        if not isinstance(event, ev.Status):  # our own status reports are not harness activity
            self.tracker.observe(event, self._now)
        self._announce()

    def _announce(self) -> None:
        state = self.state
        if state != self._announced:
            self._announced = state
            self._out.append(Emit(ev.Status(state=state, stalled=self.tracker.stalled)))

    def _set_lifecycle(self, lifecycle: Lifecycle | None) -> None:
        self.lifecycle = lifecycle
        self._announce()

    def _save_meta(self, **changes: Any) -> None:
        self.meta = msgspec.structs.replace(self.meta, state=self.state, **changes)
        self._out.append(SaveMeta(self.meta))

    def _check_timers(self) -> None:
        for pid in self.approvals.expired(self._now):
            self._decide(pid, "timeout", "session")
        changed = self.tracker.check_stall(self._now)
        if changed is not None:
            self._emit(ev.Status(state=self.state, stalled=changed))


def describe_exit(status: ExitStatus) -> str:
    """How a child ended, for messages: ``killed by SIGKILL`` or ``exited with status 3``."""
    if status.signal:
        return f"killed by {status.signal}"
    return f"exited with status {status.exit_code}"


def _exit(status: ExitStatus | None, reason: Literal["crashed", "closed"]) -> ev.Exit:
    if status is None:
        return ev.Exit(reason=reason)
    return ev.Exit(exit_code=status.exit_code, signal=status.signal, reason=reason)
