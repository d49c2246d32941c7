"""Codex approval requests (server→client JSON-RPC requests) as ``permission`` events; answers.

=========================================  ===========  =====  ===================================
method                                     tool         kind   allow / allow_always / deny
=========================================  ===========  =====  ===================================
``item/commandExecution/requestApproval``  shell        exec   accept / acceptForSession / decline
``item/fileChange/requestApproval``        apply_patch  edit   accept / acceptForSession / decline
``item/permissions/requestApproval``       permissions  other  grant: turn / session / none
``mcpServer/elicitation/request``          mcp__S__T    mcp    accept / accept+persist / decline
``execCommandApproval`` (v1)               shell        exec   approved / …_for_session / denied
``applyPatchApproval`` (v1)                apply_patch  edit   approved / …_for_session / denied
=========================================  ===========  =====  ===================================

Codex 0.171.0 asks before an MCP tool call with an elicitation whose ``_meta.codex_approval_kind``
is ``mcp_tool_call`` (``tool_name``, ``tool_params``, ``persist``); ``allow_always`` answers it
with ``_meta: {"persist": "session"}`` when Codex offers that. Any other elicitation is a form for
a person, which corral has no surface for: it is declined at once (``DECLINE_ELICITATION``).

``decline`` denies the action and lets the turn go on (``cancel`` would also end the turn; it is
what ``goodbye`` answers with). A file-change request carries no paths, so its input takes them
from the ``fileChange`` item that ``item/started`` announced under the same ``itemId``.

``permission_id`` must be unique within the session, across restarts, but Codex numbers its
JSON-RPC requests from 0 in every process, so the id is Codex's own id for the approval: its
``approvalId`` when given (several callbacks of one command), else the ``itemId`` (``callId`` in
v1), which is the model's tool-call id; an MCP approval has neither and gets
``<turnId>:<request id>``; with no turn either, ``<epoch>:<request id>`` where ``epoch`` is
unique per process (the translator's). The translator numbers repeats (``id#2``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from protocol.events import Decision, Permission, ToolKind

from . import jsonrpc, messages as m

OPTIONS = ["allow", "deny", "allow_always"]
"""The decisions every Codex approval accepts."""


class Approval(msgspec.Struct, kw_only=True, frozen=True):
    """An open approval request: what to answer, and how."""

    request_id: jsonrpc.RequestId
    method: str
    requested: dict[str, Any] = {}


def permission_for(method: str, request_id: jsonrpc.RequestId, params: msgspec.Raw,
                   items: Mapping[str, m.Item], *,
                   epoch: str) -> tuple[Approval, Permission] | None:
    """The approval and its ``permission`` event, or ``None`` for a request we do not serve.

    The event's ``permission_id`` is Codex's id for the approval (see the module docstring);
    ``epoch`` makes the last-resort id unique per process.
    """
    tool: str
    kind: ToolKind
    requested: dict[str, Any] = {}
    data: dict[str, Any]
    key: str | None
    match method:
        case "item/commandExecution/requestApproval":
            command = jsonrpc.decode_as(params, m.CommandApproval, method)
            tool, kind, key = "shell", "exec", command.approval_id or command.item_id
            data = {"command": command.command, "cwd": command.cwd, "reason": command.reason}
        case "item/fileChange/requestApproval":
            change = jsonrpc.decode_as(params, m.FileChangeApproval, method)
            item = items.get(change.item_id or "")
            tool, kind, key = "apply_patch", "edit", change.item_id
            data = {"changes": item.changes if item is not None else None,
                    "reason": change.reason, "grant_root": change.grant_root}
        case "item/permissions/requestApproval":
            ask = jsonrpc.decode_as(params, m.PermissionsApproval, method)
            tool, kind, requested, key = "permissions", "other", ask.permissions, ask.item_id
            data = {"permissions": ask.permissions, "cwd": ask.cwd, "reason": ask.reason}
        case "mcpServer/elicitation/request":
            ask_mcp = jsonrpc.decode_as(params, m.McpElicitation, method)
            meta = ask_mcp.meta or {}
            if meta.get("codex_approval_kind") != "mcp_tool_call":
                return None
            tool, kind = f"mcp__{ask_mcp.server_name}__{meta.get('tool_name', 'unknown')}", "mcp"
            key = f"{ask_mcp.turn_id}:{request_id}" if ask_mcp.turn_id else None
            persist = meta.get("persist")
            requested = {"persist": "session" in persist if isinstance(persist, list) else False}
            data = {"arguments": meta.get("tool_params"), "message": ask_mcp.message}
        case "execCommandApproval":
            legacy = jsonrpc.decode_as(params, m.LegacyExecApproval, method)
            tool, kind, key = "shell", "exec", legacy.approval_id or legacy.call_id
            data = {"command": " ".join(legacy.command), "cwd": legacy.cwd, "reason": legacy.reason}
        case "applyPatchApproval":
            patch = jsonrpc.decode_as(params, m.LegacyPatchApproval, method)
            tool, kind, key = "apply_patch", "edit", patch.call_id
            data = {"changes": patch.file_changes, "reason": patch.reason,
                    "grant_root": patch.grant_root}
        case _:
            return None
    event = Permission(permission_id=key or f"{epoch}:{request_id}", tool=tool, kind=kind,
                       input={name: value for name, value in data.items() if value is not None},
                       options=list(OPTIONS))
    return Approval(request_id=request_id, method=method, requested=requested), event


def decision_result(approval: Approval, decision: Decision) -> dict[str, Any]:
    """The ``result`` answering ``approval`` with ``decision``."""
    if approval.method == "item/permissions/requestApproval":
        granted = {} if decision == "deny" else approval.requested
        return {"permissions": _granted(granted),
                "scope": "session" if decision == "allow_always" else "turn"}
    if approval.method == _ELICITATION:
        if decision == "deny":
            return dict(DECLINE_ELICITATION)
        persist = {"persist": "session"} if (
            decision == "allow_always" and approval.requested.get("persist")) else None
        return {"action": "accept", "content": {}, "_meta": persist}
    if approval.method in _LEGACY:
        legacy: dict[Decision, Any] = {
            "allow": "approved", "allow_always": "approved_for_session",
            "deny": {"denied": {"rejection": "The user declined this action."}}}
        return {"decision": legacy[decision]}
    current: dict[Decision, str] = {
        "allow": "accept", "allow_always": "acceptForSession", "deny": "decline"}
    return {"decision": current[decision]}


def cancel_result(approval: Approval) -> dict[str, Any]:
    """The ``result`` that withdraws ``approval`` and stops its turn (used when closing)."""
    if approval.method == "item/permissions/requestApproval":
        return {"permissions": {}, "scope": "turn"}
    if approval.method == _ELICITATION:
        return {"action": "cancel", "content": None, "_meta": None}
    return {"decision": "abort" if approval.method in _LEGACY else "cancel"}


DECLINE_ELICITATION: dict[str, Any] = {"action": "decline", "content": None, "_meta": None}
"""The answer to an MCP elicitation that is not a tool-call approval."""

_ELICITATION = "mcpServer/elicitation/request"
_LEGACY = frozenset({"execCommandApproval", "applyPatchApproval"})


def _granted(requested: dict[str, Any]) -> dict[str, Any]:
    # The request lists absent profiles as null; a grant omits them instead.
    return {key: value for key, value in requested.items() if value is not None}
