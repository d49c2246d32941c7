"""What the MCP tools read from a session's events, sans IO: one prompt's turn, and a digest.

``PromptTurn`` follows the turn a prompt starts. The tool shell feeds it every event of the
session from the seq after the newest one that existed before the prompt was sent, in order:

* the turn starts at the first ``user`` event whose text is the prompt's (a prompt held or
  steered is delivered later, but it is delivered as a ``user`` event all the same);
* it ends at the next ``result`` (the answer), or when the harness child exits or the session
  ends first (an answer with ``is_error``);
* its text is the last assistant message of the turn: deltas add to the current message, a whole
  message that repeats the deltas just streamed is their consolidated copy, and a tool call or a
  permission request ends a message.

``OpenPermissions`` tracks the requests nobody has decided yet (``permission`` minus
``permission_decided``); ``Digest`` folds a whole log into the last result and those requests.
"""

from __future__ import annotations

from typing import Any

import msgspec

from protocol.events import (
    Assistant,
    Error,
    Event,
    Exit,
    Permission,
    PermissionDecided,
    Result,
    Status,
    Tool,
    User,
)

__all__ = ["Digest", "OpenPermissions", "PromptTurn", "permission_view"]

_ENDED = frozenset({"closed", "failed"})


def permission_view(permission: Permission) -> dict[str, Any]:
    """A permission request as the tools show it."""
    return {"permission_id": permission.permission_id, "tool": permission.tool,
            "input": permission.input}


class OpenPermissions:
    """The permission requests of a session that are still undecided, in the order they came."""

    def __init__(self) -> None:
        self.open: dict[str, Permission] = {}

    def receive(self, event: Event) -> None:
        match event:
            case Permission(permission_id=pid):
                self.open[pid] = event
            case PermissionDecided(permission_id=pid):
                self.open.pop(pid, None)
            case Status(state=state) if state in _ENDED:
                self.open.clear()


class PromptTurn:
    """One prompt's turn (see the module docstring)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.started = False
        self.done = False
        self.result: Result | None = None
        self.error: Error | None = None
        self.ended: str | None = None
        """Why the turn ended without a result: ``exit:<reason>`` or the session's final state."""
        self.permissions = OpenPermissions()
        self.events = 0
        """Events of the turn seen so far (its progress)."""
        self._messages: list[str] = []
        self._current = ""

    def receive(self, event: Event) -> None:
        """Take the next event of the session."""
        self.permissions.receive(event)
        if self.done:
            return
        if not self.started:
            if isinstance(event, User) and event.text == self.text:
                self.started = True
            elif isinstance(event, Status) and event.state in _ENDED:
                self.done, self.ended = True, event.state
            return
        self.events += 1
        match event:
            case Assistant(text=text, delta=True, subagent=msgspec.UNSET):
                self._current += text
            case Assistant(text=text, subagent=msgspec.UNSET):
                if self._current != text:
                    self._close()
                    self._current = text
                self._close()
            case Tool() | Permission():
                self._close()
            case Error():
                self.error = event
            case Result():
                self.result, self.done = event, True
            case Exit(reason=reason):
                self.done, self.ended = True, f"exit:{reason}"
            case Status(state=state) if state in _ENDED:
                self.done, self.ended = True, state

    @property
    def final_text(self) -> str:
        """The turn's last assistant message ("" when it said nothing)."""
        for text in [self._current, *reversed(self._messages)]:
            if text:
                return text
        return ""

    def answer(self, state: str) -> dict[str, Any]:
        """The tool's answer for a turn that is ``done`` (``state``: the session's state now)."""
        result = self.result
        out: dict[str, Any] = {
            "state": state, "text": self.final_text,
            "stop_reason": result.stop_reason if result is not None else self.ended,
            "is_error": result.is_error if result is not None else True,
            "usage": msgspec.to_builtins(result.usage) if result is not None else None,
            "cost_usd": result.cost_usd if result is not None else None,
        }
        if self.error is not None:
            out["error"] = {"code": self.error.code, "message": self.error.message}
        return out

    def _close(self) -> None:
        if self._current:
            self._messages.append(self._current)
        self._current = ""


class Digest:
    """A session's log folded into its last result and its undecided permission requests."""

    def __init__(self) -> None:
        self.last_result: dict[str, Any] | None = None
        self.permissions = OpenPermissions()

    def receive(self, seq: int, event: Event) -> None:
        self.permissions.receive(event)
        if isinstance(event, Result):
            self.last_result = {"seq": seq, **msgspec.to_builtins(event)}
