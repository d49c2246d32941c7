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

**Layout.** ``SessionCore`` is built in three layers, one module each: ``corestate``
(``CoreState``: the state, what can be read of it, and the steps every decision is made of),
``ending`` (``Endings``: close, abandon, abort, storage lost) and this one (the inputs).
"""

from __future__ import annotations

import msgspec

from actors.harness import Translator
from actors.session.ending import Endings, describe_exit, exit_event
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
    GaveUp,
    Input,
    Output,
    Request,
    Stop,
    StorageLost,
    Tick,
    WorkDone,
)
from protocol import events as ev
from protocol.errors import (
    BadRequest, CorralError, ProtocolError, SessionBusy, SessionClosed, Unsupported,
)
from protocol.events import Delivery
from protocol.messages import (
    Empty,
    PromptResult,
    SessionClose,
    SessionCompact,
    SessionInterrupt,
    SessionPermission,
    SessionPrompt,
    SessionSetModel,
    SessionSetPermissions,
)
from supervisor.proc.spec import ExitStatus

__all__ = ["SessionCore"]


class SessionCore(Endings):
    """One session's state and decisions; feed it with ``receive`` (see the module docstring).

    Built on ``Endings`` (``actors.session.ending``) and ``CoreState``
    (``actors.session.corestate``); this layer takes the inputs.
    """

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
            case SessionSetPermissions(mode=mode):
                self._set_permissions(mode, msg.by)
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
        self._emit(exit_event(status, "crashed"))
        self._crashed(reason)

    def _crashed(self, reason: str) -> None:
        self._restart_due = True
        self._last_crash = reason
        self._set_lifecycle("restarting")

    def _on_gave_up(self) -> None:
        if self.finished or self.lifecycle == "closing":
            return
        settings = self.settings
        self._emit(ev.Error(error_class="launch", code="restart_intensity",
                            message=f"the harness crashed more than {settings.restart_intensity} times "
                                    f"in {settings.restart_period:g} s (last: {self._last_crash})"))
        self._report_lost("the session failed")
        self._end("failed", "failed")
