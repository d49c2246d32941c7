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
``waiting``) and is ``None`` while a ready child runs. It changes only by the moves of the table in
``actors.session.lifecycle`` (named in brackets below); a move the table does not allow is a bug
and raises ``LifecycleError``, on which the shell feeds ``Abort`` as for any bug of the core:

=========== ========================== ======================================================
lifecycle   input                      effect
=========== ========================== ======================================================
starting,   spawned(g)                 (``restarted`` if a crash came before) g's translator
restarting                             starts; ``starting`` until it is ready [spawned], then
                                       activity [ready]
            spawn_failed(g)            ``error {launch}``, ``exit {crashed}`` → restarting
                                       [crashed]
            gave_up                    ``error {restart_intensity}`` → failed [gave_up]
None        child exited, unasked      open permissions ``cancelled``; a running turn ends with
(activity)                             ``error {harness_crashed}`` + ``result {is_error}``;
                                       ``exit {crashed}`` → restarting [crashed]
any live    close, stop                → closing [close]; open permissions ``cancelled``; the
                                       child gets ``CloseChild`` with the translator's goodbye,
                                       or, with no child running, the close ends at once
closing     child exited               a running turn ends ``result {interrupted}``; held
                                       prompts reported; ``exit {closed}`` → closed [closed];
                                       every close request answered
closing     permission from the child  decided ``cancelled`` at once
any live    abort (a bug)              ``error {code}``; open permissions cancelled, the turn
                                       ends, ``exit {killed}`` → failed [abort]
any live    abandoned                  as ``closing`` + exited with no status
any live    storage lost               → failed [abort], announced nowhere (the log takes no
                                       more events); ``meta.json`` says ``storage_failed``
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

**Layout.** ``SessionCore`` takes the inputs and decides about the child; it is composed of a
``CoreState`` (``actors.session.corestate``: the state, what can be read of it, and the steps every
decision is made of), an ``Endings`` (``actors.session.ending``: close, abandon, give up, abort,
storage lost) and a ``ClientRequests`` (``actors.session.clientrequests``: the clients' requests,
prompts held and released) that act on that same state. The lifecycle's table is
``actors.session.lifecycle``.
"""

from __future__ import annotations

from actors.harness import Driver, HarnessRequest
from actors.session.clientrequests import ClientRequests
from actors.session.config import SessionsConfig
from actors.session.corestate import CoreState
from actors.session.ending import Endings, describe_exit, exit_event
from actors.session.lifecycle import Lifecycle, Move
from actors.session.messages import (
    Abandoned,
    Abort,
    ChildBroken,
    ChildFrame,
    ChildReaped,
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
from actors.session.meta import SessionMeta
from protocol import events as ev
from protocol.errors import ProtocolError
from protocol.events import SessionState
from protocol.models import SessionInfo
from supervisor.proc.spec import ExitStatus

__all__ = ["SessionCore"]


class SessionCore:
    """One session's state and decisions; feed it with ``receive`` (see the module docstring).

    Composed of a ``CoreState`` (``actors.session.corestate``) and an ``Endings``
    (``actors.session.ending``) acting on it; this class takes the inputs.
    """

    __slots__ = ("_endings", "_requests", "_state")

    def __init__(self, meta: SessionMeta, request: HarnessRequest, driver: Driver,
                 settings: SessionsConfig, *, now: float, resumed: bool = False) -> None:
        self._state = CoreState(meta, request, driver, settings, now=now, resumed=resumed)
        self._endings = Endings(self._state)
        self._requests = ClientRequests(self._state, self._endings)

    # --- reading ------------------------------------------------------------------------

    @property
    def meta(self) -> SessionMeta:
        return self._state.meta

    @property
    def request(self) -> HarnessRequest:
        """The session's harness request, with today's model."""
        return self._state.request

    @property
    def lifecycle(self) -> Lifecycle | None:
        """The lifecycle (``None``: a ready child runs); see ``actors.session.lifecycle``."""
        return self._state.lifecycle

    @property
    def state(self) -> SessionState:
        """The state clients see: the lifecycle, else the tracker's activity."""
        return self._state.state

    @property
    def finished(self) -> bool:
        """Whether the session ended (``closed`` or ``failed``): nothing more will happen."""
        return self._state.finished

    def allows(self, move: Move) -> bool:
        """Whether the lifecycle table allows ``move`` now (``allows("close")``: a close would
        begin, the session is neither closing nor ended)."""
        return self._state.allows(move)

    @property
    def restarts(self) -> int:
        return self._state.restarts

    @property
    def pid(self) -> int | None:
        """The running child's pid, if one runs."""
        return self._state.pid

    @property
    def first_failure(self) -> tuple[str, str] | None:
        """Why the first child did not start (``code``, ``message``), if it did not."""
        return self._state.first_failure

    @property
    def settled(self) -> bool:
        """Whether the first child generation was heard of (spawned, or failed to be)."""
        return self._state.settled

    def child_request(self) -> HarnessRequest:
        """What the next child generation is launched from (``CoreState.child_request``)."""
        return self._state.child_request()

    def next_deadline(self) -> float | None:
        """When the core wants a ``Tick``: a permission timeout or the stall threshold."""
        return self._state.next_deadline()

    def info(self, last_seq: int) -> SessionInfo:
        """A snapshot for ``session.get``/``session.list``."""
        return self._state.info(last_seq)

    # --- the one entry point -----------------------------------------------------------

    def receive(self, msg: Input, now: float) -> list[Output]:
        """Take one input at time ``now``; return what to do, in order.

        Raises only on a bug (of the core or a translator; a lifecycle move the table does not
        allow: ``LifecycleError``); the shell then feeds ``Abort``, which gets the outputs
        decided before the failure too.
        """
        s = self._state
        s.now = now
        match msg:
            case Request():
                self._requests.take(msg)
            case ChildSpawned():
                self._on_spawned(msg)
            case ChildSpawnFailed(gen=gen, code=code, message=message):
                self._on_spawn_failed(gen, code, message)
            case ChildFrame(gen=gen, data=data):
                if self._is_current(gen):
                    self._on_frame(data)
            case ChildBroken(gen=gen, code=code, message=message):
                if self._is_current(gen):
                    s.emit(ev.Error(error_class="protocol", code=code, message=message))
                    s.broken = message
            case ChildReaped(gen=gen, status=status):
                if self._is_current(gen):
                    self._on_exited(status)
            case WorkDone(gen=gen, id=work_id, outcome=outcome):
                if self._is_current(gen):
                    # a translator that hands out ``Work`` has ``finished`` (actors.harness)
                    finished = getattr(s.translator, "finished")
                    s.outputs(finished(work_id, outcome, now))
            case GaveUp():
                self._endings.gave_up()
            case Stop():
                if s.allows("close"):
                    self._endings.begin_close("daemon_stopped")
            case Abandoned():
                self._endings.abandoned()
            case Abort(code=code, message=message):
                self._endings.abort(code, message)
            case StorageLost():
                self._endings.storage_lost()
            case Tick():
                pass
        if not s.finished:
            s.check_timers()
            self._requests.release_held()
        out, s.out = s.out, []
        return out

    # --- the child ----------------------------------------------------------------------

    def _is_current(self, gen: int) -> bool:
        return gen == self._state.gen and self._state.translator is not None

    def _on_spawned(self, msg: ChildSpawned) -> None:
        s = self._state
        if msg.gen <= s.gen:
            return
        if s.finished:
            s.out.append(CloseChild(gen=msg.gen))  # too late: the session has ended
            return
        self._new_generation(msg.gen)
        translator = s.driver.translator(msg.request)
        s.translator, s.pid = translator, msg.pid
        if msg.placement is not None:
            s.placement = msg.placement
        s.tracker.reset(s.now)
        s.move("ready" if translator.ready else "spawned")
        s.outputs(translator.start(s.now))

    def _on_spawn_failed(self, gen: int, code: str, message: str) -> None:
        s = self._state
        if gen <= s.gen or s.finished:
            return
        if gen == 1:
            s.first_failure = (code, message)
        self._new_generation(gen)
        s.emit(ev.Error(error_class="launch", code=code, message=message))
        s.emit(ev.Exit(reason="crashed"))
        self._crashed(message)

    def _new_generation(self, gen: int) -> None:
        s = self._state
        s.gen = gen
        s.settled = True
        if s.restart_due:
            s.restart_due = False
            s.restarts += 1
            s.save_meta(restarts=s.restarts)
            s.emit(ev.Restarted(attempt=s.restarts, reason=s.last_crash))

    def _on_frame(self, data: bytes) -> None:
        s = self._state
        translator = s.translator
        if translator is None:
            return
        try:
            outputs = translator.receive(data, s.now)
        except ProtocolError as exc:
            s.emit(ev.Error(error_class="protocol", code=str(exc.code), message=exc.message))
            return
        became_ready = s.lifecycle == "starting" and translator.ready
        s.outputs(outputs)
        if became_ready and s.lifecycle == "starting":
            s.move("ready")

    def _on_exited(self, status: ExitStatus | None) -> None:
        s = self._state
        if s.allows("closed"):  # the child a close waited for
            self._endings.finish_close(status)
            return
        reason = s.broken or (describe_exit(status) if status is not None else "ended")
        s.cancel_permissions()
        if s.tracker.turn_running:
            s.emit(ev.Error(error_class="unknown", code="harness_crashed",
                            message=f"the harness child ended during the turn ({reason})"))
            s.emit(s.complete(ev.Result(stop_reason="error", is_error=True)))
        s.child_gone()
        s.emit(exit_event(status, "crashed"))
        self._crashed(reason)

    def _crashed(self, reason: str) -> None:
        s = self._state
        s.restart_due = True
        s.last_crash = reason
        s.move("crashed")
