"""The params corral sends with ``thread/start``/``thread/resume`` and ``turn/*``.

Policy mapping (``thread/start`` ``approvalPolicy``/``sandbox``), approvals routed to us
(``approvalsReviewer: user``) in the first two:

* ``ask`` → ``untrusted`` + ``workspace-write``: Codex asks before every command it does not
  itself consider safe (checked with 0.171.0: a plain ``touch`` asks; allow and ``decline`` both
  work), so the clients decide, as with Claude Code's ``default`` mode;
* ``auto_edit`` → ``on-request`` + ``workspace-write``: commands and edits inside the sandbox run
  unasked, escalations ask; any edit approval Codex still sends is kind ``edit``, which the
  session's policy answers;
* ``auto`` → ``never`` + ``danger-full-access``; ``inherit`` → nothing (the user's config decides).
``options.approval_policy`` and ``options.sandbox`` (a string: an object is corral's own
sandbox) override the mapping verbatim. A session in corral's sandbox (``actors.sandboxing``)
gets ``danger-full-access`` from the mapping: Codex's own sandbox cannot nest inside it.
"""

from __future__ import annotations

from typing import Any

from actors.harness import HarnessRequest
from protocol.errors import BadRequest


def thread_policy(request: HarnessRequest) -> dict[str, Any]:
    """The ``approvalPolicy``/``sandbox``/``approvalsReviewer`` params for the session's mode."""
    policy: dict[str, Any]
    match request.permissions.mode:
        case "ask":
            policy = {"approvalPolicy": "untrusted", "sandbox": "workspace-write",
                      "approvalsReviewer": "user"}
        case "auto_edit":
            policy = {"approvalPolicy": "on-request", "sandbox": "workspace-write",
                      "approvalsReviewer": "user"}
        case "auto":
            policy = {"approvalPolicy": "never", "sandbox": "danger-full-access"}
        case _:
            policy = {}
    if request.sandbox is not None and "sandbox" in policy:
        # corral's sandbox holds Codex's whole process tree; Codex's own (a nested bubblewrap)
        # cannot set up its user namespace inside it, and would confine nothing more.
        policy["sandbox"] = "danger-full-access"
    for option, param in (("approval_policy", "approvalPolicy"), ("sandbox", "sandbox")):
        value = request.options.get(option)
        if option == "sandbox" and isinstance(value, dict):
            continue  # corral's own sandbox (``actors.sandboxing``), not Codex's
        if value is not None and not isinstance(value, str):
            raise BadRequest(f"options.{option} must be a string")
        if value:
            policy[param] = value
    return policy


def user_input(text: str) -> list[dict[str, Any]]:
    """A text ``UserInput`` list (``text_elements`` is optional in 0.171.0; sent empty)."""
    return [{"type": "text", "text": text, "text_elements": []}]
