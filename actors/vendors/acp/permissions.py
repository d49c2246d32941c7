"""``session/request_permission`` as a ``permission`` event, and a decision as the agent's option.

Agents name their options freely (Gemini ``proceed_once``/``proceed_always``/``cancel``, Claude's
adapter ``allow``/``allow_always``/``reject``, Copilot ``allow_once``/…); ACP gives each a
``kind``, and corral maps by kind:

=================  ==============================================
corral decision    option kind chosen (first match)
=================  ==============================================
``allow``          ``allow_once``, else ``allow_always``
``allow_always``   ``allow_always``, else ``allow_once``
``deny``           ``reject_once``, else ``reject_always``
=================  ==============================================

A ``permission`` event offers the decisions the agent has options for. Its ``tool``, ``kind``
and ``input`` come from the tool call as ``updates`` names it (raw input, else title and paths).
"""

from __future__ import annotations

from typing import Any

from protocol.events import Decision, Permission

from .wire import PermissionOption

__all__ = ["choose", "decisions", "permission_event", "CANCELLED"]

CANCELLED: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}
"""The answer to a request withdrawn by ``session/cancel`` (ACP requires it)."""

_PREFERENCES: dict[Decision, tuple[str, ...]] = {
    "allow": ("allow_once", "allow_always"),
    "allow_always": ("allow_always", "allow_once"),
    "deny": ("reject_once", "reject_always"),
}


def choose(options: list[PermissionOption], decision: Decision) -> dict[str, Any]:
    """The response selecting the option for ``decision`` (cancelled if the agent offers none)."""
    for kind in _PREFERENCES[decision]:
        for option in options:
            if option.kind == kind:
                return {"outcome": {"outcome": "selected", "optionId": option.option_id}}
    return dict(CANCELLED)


def decisions(options: list[PermissionOption]) -> list[str]:
    """The corral decisions the agent's options allow, in corral's usual order."""
    kinds = {option.kind for option in options}
    found = [d for d in ("allow", "deny", "allow_always")
             if any(kind in kinds for kind in _PREFERENCES[d][:1])]
    if "allow" not in found and "allow_always" in found:
        found.insert(0, "allow")
    return found or ["allow", "deny"]


def permission_event(permission_id: str, tool: str, kind: Any, tool_input: Any,
                     options: list[PermissionOption]) -> Permission:
    """The ``permission`` event for one request."""
    return Permission(permission_id=permission_id, tool=tool, kind=kind, input=tool_input,
                      options=decisions(options))
