"""One attached session's state in the facade, sans IO: its events in, what to do out.

The shell (``supervisor.acp.agent``) feeds ``receive`` every event of the session's
subscription, in seq order, and performs the actions it returns:

=============  ==============================================================================
action         when
=============  ==============================================================================
``Update``     a ``session/update`` for the editor (``supervisor.acp.updates`` maps events)
``Answered``   a ``session/prompt`` of the editor is over: the ``result`` of the turn its
               ``user`` event started (or that it was steered into), or the session ended
``Ask``        a live ``permission`` nobody's policy answers: ask the editor
``Withdraw``   another client decided a permission the editor is still being asked (ACP v1
               cannot take a request back: a ``tool_call_update`` says what became of it)
=============  ==============================================================================

Replay (``live`` false, before ``caught_up``) maps events to updates only: a ``user`` event is
then always shown, and permissions still undecided when the replay ends are asked then. Live, a
``user`` event whose text is that of the editor's oldest unstarted prompt is that prompt's (not
echoed back); any other is another client's and becomes a ``user_message_chunk``. State is only
ever what the daemon's log says, so a restarted facade rebuilds it with a replay.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from protocol.events import (
    Error, Event, Permission, PermissionDecided, Result, Status, User,
)

from .schema import Update
from .updates import Updates

__all__ = ["Action", "Answered", "Ask", "SessionTurns", "Withdraw", "stop_reason"]

_CANCELLED = {"interrupted", "cancelled", "canceled", "aborted", "interrupt"}
_STOP_REASONS = {
    "max_tokens": "max_tokens", "length": "max_tokens", "max_output_tokens": "max_tokens",
    "refusal": "refusal", "refused": "refusal", "content_filter": "refusal",
    "max_turn_requests": "max_turn_requests", "max_turns": "max_turn_requests",
}


class Answered(NamedTuple):
    """The prompt ``token`` is over: ``stop_reason`` (ACP's), or ``error`` (code, message)."""

    token: int
    stop_reason: str
    error: tuple[str, str] | None = None


class Ask(NamedTuple):
    permission: Permission


class Withdraw(NamedTuple):
    permission_id: str
    status: str
    """``in_progress`` (allowed) or ``failed`` (denied, timed out, cancelled)."""


Action = Update | Answered | Ask | Withdraw


def stop_reason(result: Result) -> str:
    """ACP's ``StopReason`` for a corral ``result``."""
    reason = (result.stop_reason or "").lower()
    if reason in _CANCELLED:
        return "cancelled"
    return _STOP_REASONS.get(reason, "end_turn")


class _Prompt:
    def __init__(self, token: int, text: str) -> None:
        self.token = token
        self.text = text
        self.started = False


class SessionTurns:
    """The editor's prompts and permission requests on one session (see the module docstring)."""

    def __init__(self, session_id: str, cwd: str, connection_id: str) -> None:
        self.session_id = session_id
        self.connection_id = connection_id
        self.live = False
        self.updates = Updates(cwd)
        self._tokens = itertools.count(1)
        self._prompts: list[_Prompt] = []
        self._undecided: dict[str, Permission] = {}
        self._asked: set[str] = set()
        self._error: tuple[str, str] | None = None

    # --- the editor's side ------------------------------------------------------------------

    def prompt_sent(self, text: str) -> int:
        """Record a prompt about to be sent (before it is: its ``user`` event may come first)."""
        prompt = _Prompt(next(self._tokens), text)
        self._prompts.append(prompt)
        return prompt.token

    def prompt_failed(self, token: int) -> None:
        """The daemon refused the prompt: nothing will start it."""
        self._prompts = [p for p in self._prompts if p.token != token]

    def answered(self, permission_id: str) -> bool:
        """The editor answered ``permission_id``; whether its answer still counts (false once
        another client decided and the request was withdrawn)."""
        if permission_id in self._asked:
            self._asked.discard(permission_id)
            return True
        return False

    def abandon(self) -> list[Answered]:
        """The subscription ended (the session closed, the daemon left): every prompt is over."""
        return self._end_prompts(("session_closed", f"session {self.session_id} ended"))

    # --- the session's events ---------------------------------------------------------------

    def caught_up(self) -> list[Action]:
        """The replay is over: from now on events are live; ask what is still undecided."""
        self.live = True
        undecided, self._undecided = list(self._undecided.values()), {}
        self._asked.update(p.permission_id for p in undecided)
        return [Ask(p) for p in undecided]

    def receive(self, event: Event) -> list[Action]:
        """What to do about one event of the session, in seq order."""
        out: list[Action] = []
        match event:
            case User(text=text) if self.live:
                prompt = next((p for p in self._prompts if not p.started), None)
                if prompt is not None and prompt.text == text:
                    prompt.started = True
                    return []
            case Permission(permission_id=pid, policy=False):
                if self.live:
                    self._asked.add(pid)
                    out.append(Ask(event))
                else:
                    self._undecided[pid] = event
            case PermissionDecided(permission_id=pid, decision=decision, by=by):
                self._undecided.pop(pid, None)
                if pid in self._asked:
                    self._asked.discard(pid)
                    if by != self.connection_id:
                        allowed = decision in ("allow", "allow_always")
                        out.append(Withdraw(pid, "in_progress" if allowed else "failed"))
            case Error(code=code, message=message) if any(p.started for p in self._prompts):
                self._error = (code, message)
        out.extend(self.updates.updates(event))
        match event:
            case Result(is_error=is_error) if self.live:
                reason = stop_reason(event)
                error = None
                if is_error and reason != "cancelled":
                    error = self._error or ("turn_failed", "the turn ended with an error")
                self._error = None
                done = [p for p in self._prompts if p.started]
                self._prompts = [p for p in self._prompts if not p.started]
                out.extend(Answered(p.token, reason, error) for p in done)
            case Status(state="closed" | "failed" as state) if self.live:
                out.extend(self._end_prompts(("session_closed", f"session {self.session_id} is {state}")))
        return out

    def _end_prompts(self, error: tuple[str, str]) -> list[Answered]:
        ended, self._prompts = self._prompts, []
        return [Answered(p.token, "end_turn", error) for p in ended]
