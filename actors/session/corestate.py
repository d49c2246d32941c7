"""A session core's state, and the steps every decision of it is made of.

``SessionCore`` (``actors.session.core``, whose header holds the theory of operation) owns one
``CoreState`` and hands it to the helpers it is composed of (``actors.session.ending``'s
``Endings``), so they all act on the same state. It holds the state, what can be read of it,
and the steps every decision uses: recording an event (``emit``; the ``status`` it implies
follows at once), a move of the lifecycle (``move``, through the table in
``actors.session.lifecycle``) and the metadata, permission decisions, a translator's outputs
(frames and jobs for its generation, events into the session) and the timers. No I/O, no trio,
no clock: time comes in as ``now``. Its fields are read and written by the core and its
helpers only; the daemon reads a session through ``SessionCore``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from actors.harness import Driver, HarnessRequest, Send, Translator, Work, WorkOutput
from actors.session.approvals import Approvals
from actors.session.config import SessionsConfig
from actors.session.lifecycle import FINAL, Lifecycle, Move, allows, next_lifecycle
from actors.session.messages import Emit, Output, RunWork, SaveMeta, Write
from actors.session.meta import SessionMeta
from actors.session.policy import Policy
from actors.session.prompts import PromptQueue
from actors.session.tracker import Tracker
from protocol import events as ev
from protocol.events import Decision, SessionState
from protocol.models import PermissionMode, Placement, SessionInfo

__all__ = ["CoreState", "Lifecycle"]


class CoreState:
    """A session core's state and its common steps (see the module docstring)."""

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
        """Changed by ``move`` only (``actors.session.lifecycle``)."""
        self.restarts = meta.restarts
        self.pid: int | None = None
        self.placement: Placement | None = None
        """Where the last child ran (a placement backend other than ``local``)."""
        self.settled = False
        self.first_failure: tuple[str, str] | None = None
        """The code and message of the first generation's failure to start, if it failed."""
        """Whether the first child generation was heard of (spawned, or failed to be)."""
        self.gen = 0
        """The generation of the child the core listens to (0 before the first)."""
        self.translator: Translator | None = None
        # A resumed session's first generation is announced as ``restarted {reason: "resumed"}``.
        self.restart_due = resumed
        self.last_crash = "resumed" if resumed else "unknown"
        self.broken: str | None = None
        """Why the running child's stream broke (``ChildBroken``), for its exit's message."""
        self.turn_started_at: float | None = None
        self.closers: list[int] = []
        """The calls of the ``session.close`` requests answered once the session has closed."""
        self.closed_reason = "closed"
        self.now = now
        self.out: list[Output] = []
        """The outputs decided in the current ``receive``, in order."""
        self._announced: SessionState | None = None

    # --- reading ------------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        """The state clients see: the lifecycle, else the tracker's activity."""
        state = self.lifecycle or self.tracker.state
        return state  # type: ignore[return-value]

    @property
    def finished(self) -> bool:
        """Whether the session ended (``closed`` or ``failed``): nothing more will happen."""
        return self.lifecycle in FINAL

    @property
    def ending(self) -> bool:
        """Whether the session is closing or ended: requests other than a close are refused."""
        return self.finished or self.lifecycle == "closing"

    @property
    def running(self) -> bool:
        """Whether a ready child runs (no lifecycle overrides the activity)."""
        return self.lifecycle is None

    def allows(self, move: Move) -> bool:
        """Whether the lifecycle table allows ``move`` now."""
        return allows(self.lifecycle, move)

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
            permissions=self.request.permissions.mode, sandbox=self.request.sandbox,
            placement=self.placement,
        )

    # --- permissions and the child's departure ---------------------------------------------

    def decide(self, permission_id: str, decision: Literal["allow", "deny", "allow_always", "timeout"],
               by: str, by_name: str = "") -> None:
        """Settle a permission; ``by_name`` says who in words (``by`` itself when not given)."""
        self.approvals.settle(permission_id)
        self.emit(ev.PermissionDecided(permission_id=permission_id, decision=decision, by=by,
                                       by_name=by_name or by))
        if self.translator is not None:
            wire: Decision = "deny" if decision == "timeout" else decision
            self.outputs(self.translator.decide(permission_id, wire, self.now))

    def set_permissions(self, mode: PermissionMode, by: str) -> None:
        """``session.set_permissions``: the policy's mode from now on (and the next child's);
        open requests the new mode allows are decided by the policy at once."""
        permissions = msgspec.structs.replace(self.request.permissions, mode=mode)
        self.request = msgspec.structs.replace(self.request, permissions=permissions)
        self.approvals.policy.permissions = permissions
        self.save_meta(permissions=permissions)
        self.emit(ev.PermissionsChanged(mode=mode, by=by))
        for pid, decision in self.approvals.decidable():
            self.decide(pid, decision, "policy")

    def cancel_permissions(self) -> None:
        for pid in self.approvals.open_ids():
            self.approvals.settle(pid)
            self.emit(ev.PermissionDecided(permission_id=pid, decision="cancelled", by="session",
                                           by_name="session"))

    def child_gone(self) -> None:
        self.translator = None
        self.pid = None
        self.broken = None
        self.turn_started_at = None
        self.tracker.reset(self.now)

    # --- harness output ------------------------------------------------------------------

    def outputs(self, outputs: Sequence[WorkOutput]) -> None:
        """A translator's outputs: frames and jobs for its own generation, events into the session."""
        for out in outputs:
            if isinstance(out, Send):
                self.out.append(Write(gen=self.gen, data=out.data))
            elif isinstance(out, Work):
                self.out.append(RunWork(gen=self.gen, id=out.id, job=out.job))
            else:
                self.on_event(out)

    def on_event(self, event: ev.Event) -> None:
        """An event of the harness: recorded, and acted on (permissions, results, its init)."""
        match event:
            case ev.Permission(permission_id=pid):
                if self.lifecycle == "closing":
                    self.emit(event)
                    self.approvals.settle(pid)
                    self.emit(ev.PermissionDecided(permission_id=pid, decision="cancelled", by="session",
                                           by_name="session"))
                    return
                decision = self.approvals.open(event, self.now)
                self.emit(msgspec.structs.replace(event, policy=decision is not None))
                if decision is not None:
                    self.decide(pid, decision, "policy")
            case ev.Result():
                self.cancel_permissions()
                self.emit(self.complete(event))
                self.turn_started_at = None
            case ev.PermissionDecided(permission_id=pid):
                # The harness withdrew an open request itself: reported once; repeats and
                # requests the session already decided are dropped. Named as it says ``by``.
                if self.approvals.settle(pid):
                    self.emit(event if event.by_name else
                              msgspec.structs.replace(event, by_name=event.by))
            case ev.Init(vendor_session_id=vid, model=model):
                sandbox = self.request.sandbox
                self.emit(event if sandbox is None else msgspec.structs.replace(event, sandbox=sandbox))
                changes: dict[str, Any] = {}
                if vid and vid != self.meta.vendor_session_id:
                    changes["vendor_session_id"] = vid
                if model and self.meta.model is None:
                    changes["model"] = model  # the harness's default, as it reported it
                if changes:
                    self.save_meta(**changes)
            case _:
                self.emit(event)

    def complete(self, result: ev.Result) -> ev.Result:
        """``result`` with the turn's duration measured here when the harness gave none."""
        if result.duration_ms is None and self.turn_started_at is not None:
            return msgspec.structs.replace(
                result, duration_ms=round((self.now - self.turn_started_at) * 1000))
        return result

    # --- events, state, timers -------------------------------------------------------------

    def emit(self, event: ev.Event) -> None:
        self.out.append(Emit(event))
        if not isinstance(event, (ev.Status, ev.PermissionsChanged)):  # ours, not harness activity
            self.tracker.observe(event, self.now)
        self.announce()

    def announce(self) -> None:
        """A ``status`` event if the state clients see changed since the last one."""
        state = self.state
        if state != self._announced:
            self._announced = state
            self.out.append(Emit(ev.Status(state=state, stalled=self.tracker.stalled)))

    def move(self, move: Move, *, announce: bool = True) -> None:
        """Move the lifecycle as the table says (``LifecycleError`` for a move it does not
        allow); the new state is announced unless ``announce`` is false (a log that takes no
        more events)."""
        self.lifecycle = next_lifecycle(self.lifecycle, move)
        if announce:
            self.announce()

    def save_meta(self, **changes: Any) -> None:
        self.meta = msgspec.structs.replace(self.meta, state=self.state, **changes)
        self.out.append(SaveMeta(self.meta))

    def check_timers(self) -> None:
        for pid in self.approvals.expired(self.now):
            self.decide(pid, "timeout", "session")
        changed = self.tracker.check_stall(self.now)
        if changed is not None:
            self.emit(ev.Status(state=self.state, stalled=changed))
