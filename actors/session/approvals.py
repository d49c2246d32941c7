"""The permission requests of one session: which are open, until when, and which were decided.

Pure bookkeeping (time comes in as ``now``); the session emits the events and talks to the
harness. Every id is decided at most once: a second answer is ``already_decided``, an id never
requested is ``unknown_permission``.
"""

from __future__ import annotations

from protocol.errors import AlreadyDecided, UnknownPermission
from protocol.events import Decision, Permission

from .policy import Policy


class Approvals:
    """Open permission requests with their timeout deadlines, and every id already decided."""

    def __init__(self, policy: Policy, timeout: float) -> None:
        self.policy = policy
        self.timeout = timeout
        self._open: dict[str, Permission] = {}
        self._deadlines: dict[str, float] = {}
        self._decided: set[str] = set()

    def __bool__(self) -> bool:
        """Whether any request is waiting for a decision."""
        return bool(self._open)

    def open(self, request: Permission, now: float) -> Decision | None:
        """Record a new request; the policy's answer if it has one (the caller then settles it)."""
        self._open[request.permission_id] = request
        decision = self.policy.decide(request)
        if decision is None:
            self._deadlines[request.permission_id] = now + self.timeout
        return decision

    def check(self, permission_id: str, decision: Decision) -> None:
        """Validate a client's decision before it is settled; remembers ``allow_always``."""
        if permission_id in self._decided:
            raise AlreadyDecided(f"permission {permission_id} was already decided")
        request = self._open.get(permission_id)
        if request is None:
            raise UnknownPermission(f"no open permission {permission_id}")
        self.policy.remember(request, decision)

    def settle(self, permission_id: str) -> bool:
        """Mark a request decided; whether it was still open."""
        self._deadlines.pop(permission_id, None)
        self._decided.add(permission_id)
        return self._open.pop(permission_id, None) is not None

    def decidable(self) -> list[tuple[str, Decision]]:
        """The open requests the policy answers now (after its mode changed), oldest first."""
        answers = ((pid, self.policy.decide(request)) for pid, request in self._open.items())
        return [(pid, decision) for pid, decision in answers if decision is not None]

    def open_ids(self) -> list[str]:
        """The ids still waiting, oldest first."""
        return list(self._open)

    def expired(self, now: float) -> list[str]:
        """Ids whose timeout has passed at ``now``."""
        return [pid for pid, deadline in self._deadlines.items() if deadline <= now]

    def next_deadline(self) -> float | None:
        """The earliest timeout, or ``None`` when nothing waits on a client."""
        return min(self._deadlines.values(), default=None)
