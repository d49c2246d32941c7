"""The params corral sends with ``thread/start``/``thread/resume`` and ``turn/*``.

Policy mapping (``thread/start`` ``approvalPolicy``/``sandbox``): ``ask`` and ``auto_edit`` →
``on-request`` + ``workspace-write`` with approvals routed to us (``approvalsReviewer: user``):
Codex applies edits inside the workspace without asking, and any edit approval it still sends is
kind ``edit``, which the session's ``auto_edit`` policy answers; ``auto`` → ``never`` +
``danger-full-access``; ``inherit`` → nothing (the user's Codex config decides).
``options.approval_policy`` and ``options.sandbox`` override the mapping verbatim.
"""

from __future__ import annotations

from typing import Any

from actors.harness import HarnessRequest
from protocol.errors import BadRequest


def thread_policy(request: HarnessRequest) -> dict[str, Any]:
    """The ``approvalPolicy``/``sandbox``/``approvalsReviewer`` params for the session's mode."""
    policy: dict[str, Any]
    match request.permissions.mode:
        case "ask" | "auto_edit":
            policy = {"approvalPolicy": "on-request", "sandbox": "workspace-write",
                      "approvalsReviewer": "user"}
        case "auto":
            policy = {"approvalPolicy": "never", "sandbox": "danger-full-access"}
        case _:
            policy = {}
    for option, param in (("approval_policy", "approvalPolicy"), ("sandbox", "sandbox")):
        value = request.options.get(option)
        if value is not None and not isinstance(value, str):
            raise BadRequest(f"options.{option} must be a string")
        if value:
            policy[param] = value
    return policy


def user_input(text: str) -> list[dict[str, Any]]:
    """A text ``UserInput`` list (``text_elements`` is optional in 0.171.0; sent empty)."""
    return [{"type": "text", "text": text, "text_elements": []}]
