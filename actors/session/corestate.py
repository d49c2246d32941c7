"""The session core's state, and the steps every decision of it is made of.

``SessionCore`` (``actors.session.core``, whose header holds the theory of operation) is built
in three layers, one module each: this one (``CoreState``) holds the state, what can be read of
it, and the steps every decision uses: recording an event (``_emit``; the ``status`` it implies
follows at once), the lifecycle and metadata, permission decisions, a translator's outputs
(frames and jobs for its generation, events into the session) and the timers;
``actors.session.ending`` (``Endings``) how a session ends; ``actors.session.core`` the inputs
(requests and the child's notices). No I/O, no trio, no clock: time comes in as ``now``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal

import msgspec

from actors.harness import Driver, HarnessRequest, Send, Translator, Work, WorkOutput
from actors.session.approvals import Approvals
from actors.session.config import SessionsConfig
from actors.session.messages import Emit, Output, RunWork, SaveMeta, Write
from actors.session.meta import SessionMeta
from actors.session.policy import Policy
from actors.session.prompts import PromptQueue
from actors.session.tracker import Tracker
from protocol import events as ev
from protocol.events import Decision, SessionState
from protocol.models import PermissionMode, SessionInfo

__all__ = ["CoreState", "Lifecycle"]

Lifecycle = Literal["starting", "restarting", "closing", "closed", "failed"]
"""The states that override the tracker's activity (``None``: a ready child runs)."""
_FINAL: Final = ("closed", "failed")


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
            permissions=self.request.permissions.mode,
        )

    # --- permissions and the child's departure ---------------------------------------------

    def _decide(self, permission_id: str, decision: Literal["allow", "deny", "allow_always", "timeout"],
                by: str) -> None:
        self.approvals.settle(permission_id)
        self._emit(ev.PermissionDecided(permission_id=permission_id, decision=decision, by=by))
        if self._translator is not None:
            wire: Decision = "deny" if decision == "timeout" else decision
            self._outputs(self._translator.decide(permission_id, wire, self._now))

    def _set_permissions(self, mode: PermissionMode, by: str) -> None:
        """``session.set_permissions``: the policy's mode from now on (and the next child's);
        open requests the new mode allows are decided by the policy at once."""
        permissions = msgspec.structs.replace(self.request.permissions, mode=mode)
        self.request = msgspec.structs.replace(self.request, permissions=permissions)
        self.approvals.policy.permissions = permissions
        self._save_meta(permissions=permissions)
        self._emit(ev.PermissionsChanged(mode=mode, by=by))
        for pid, decision in self.approvals.decidable():
            self._decide(pid, decision, "policy")

    def _cancel_permissions(self) -> None:
        for pid in self.approvals.open_ids():
            self.approvals.settle(pid)
            self._emit(ev.PermissionDecided(permission_id=pid, decision="cancelled", by="session"))

    def _child_gone(self) -> None:
        self._translator = None
        self.pid = None
        self._broken = None
        self._turn_started_at = None
        self.tracker.reset(self._now)

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
                if self.lifecycle == "closing":
                    self._emit(event)
                    self.approvals.settle(pid)
                    self._emit(ev.PermissionDecided(permission_id=pid, decision="cancelled", by="session"))
                    return
                decision = self.approvals.open(event, self._now)
                self._emit(msgspec.structs.replace(event, policy=decision is not None))
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
        if not isinstance(event, (ev.Status, ev.PermissionsChanged)):  # ours, not harness activity
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
