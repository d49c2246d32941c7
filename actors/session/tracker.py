"""The activity tracker of a session: what runs, what waits, and whether it looks stalled.

Re-creates agentwire's Tracker: in-flight tools, open approvals and the time of the last event
decide between ``running``, ``waiting`` and ``idle``; a running session with no event and no
in-flight tool for ``stall_threshold`` seconds is stalled. Pure: time comes in as ``now``.
"""

from __future__ import annotations

import msgspec

from protocol.events import Checkpoint, Event, Permission, PermissionDecided, Result, Tool


class Activity(msgspec.Struct, frozen=True, kw_only=True):
    """A snapshot of the tracker."""

    turn_running: bool
    tools_in_flight: int
    approvals_open: int
    last_event_at: float
    stalled: bool


class Tracker:
    """Folds a session's events into its activity."""

    def __init__(self, *, stall_threshold: float, now: float) -> None:
        self.stall_threshold = stall_threshold
        self.turn_running = False
        self.tools: set[str] = set()
        self.approvals: set[str] = set()
        self.last_event_at = now
        self.stalled = False

    def turn_started(self, now: float) -> None:
        """A prompt went to the harness."""
        self.turn_running = True
        self.last_event_at = now

    def observe(self, event: Event, now: float) -> None:
        """Fold one harness event in."""
        self.last_event_at = now
        match event:
            case Tool(call_id=call_id, phase="completed"):
                self.tools.discard(call_id)
            case Tool(call_id=call_id):
                self.tools.add(call_id)
            case Permission(permission_id=pid):
                self.approvals.add(pid)
            case PermissionDecided(permission_id=pid):
                self.approvals.discard(pid)
            case Result():
                self.turn_running = False
                self.tools.clear()
            case Checkpoint(resumed=True):  # a restarted worker went on with its autonomous run
                self.turn_running = True
            case _:
                pass

    def reset(self, now: float) -> None:
        """The harness child is gone: nothing runs any more."""
        self.turn_running = False
        self.tools.clear()
        self.approvals.clear()
        self.last_event_at = now
        self.stalled = False

    @property
    def state(self) -> str:
        """``waiting`` with an open approval, ``running`` during a turn, else ``idle``."""
        if self.approvals:
            return "waiting"
        return "running" if self.turn_running else "idle"

    def stall_deadline(self) -> float | None:
        """When the session will count as stalled if nothing happens, or ``None`` if it cannot stall."""
        if not self.turn_running or self.tools or self.approvals:
            return None
        return self.last_event_at + self.stall_threshold

    def check_stall(self, now: float) -> bool | None:
        """Update ``stalled``; return the new value when it changed, else ``None``."""
        deadline = self.stall_deadline()
        stalled = deadline is not None and now >= deadline
        if stalled == self.stalled:
            return None
        self.stalled = stalled
        return stalled

    def snapshot(self) -> Activity:
        return Activity(
            turn_running=self.turn_running, tools_in_flight=len(self.tools),
            approvals_open=len(self.approvals), last_event_at=self.last_event_at,
            stalled=self.stalled,
        )
