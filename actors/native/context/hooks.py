"""Command hooks the way Claude Code users write them: which run, what they read, what they mean.

Pure: the worker (``actors.native.worker.hookrun``) runs the commands. The rules, after Claude
Code's documented hook contract:

* selection: an event's matchers apply in order; a matcher is a regular expression that must
  match the whole Claude tool name (``Bash``, ``Edit``, ``Glob``, … — corral's tools under
  Claude's names, see ``policy.HOST_NAMES``; other tools keep their own), ``""`` and ``*``
  match every tool; events without a tool run every matcher's hooks;
* stdin: one JSON object with ``session_id``, ``cwd``, ``hook_event_name``, and per event
  ``tool_name`` (Claude's name) and ``tool_input`` (the call's arguments as corral's tool takes
  them), ``tool_response`` (PostToolUse), ``prompt`` (UserPromptSubmit), ``stop_hook_active``
  (Stop);
* outcome: exit 2 blocks, with stderr as the reason; exit 0 may print JSON: ``{"decision":
  "block", "reason": …}``, ``{"continue": false, "stopReason": …}`` (both block), and
  ``hookSpecificOutput`` with ``permissionDecision`` ``"deny"`` (blocks, with
  ``permissionDecisionReason``) and ``updatedInput`` (replaces the tool's arguments,
  PreToolUse); any other exit status, a timeout or unreadable JSON is a warning and nothing is
  blocked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from protocol.native_context import HookCommand, HookEvent, HookMatcher

from .policy import HOST_NAMES

__all__ = ["HookOutcome", "claude_name", "interpret", "payload", "select"]

_CLAUDE = {ours: theirs for theirs, ours in HOST_NAMES.items() if theirs != "MultiEdit"}


class HookOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What one hook run means for the call or turn."""

    block: bool = False
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    warning: str | None = None


def claude_name(tool: str) -> str:
    """corral's tool name as Claude's (``find`` → ``Glob``); other names unchanged."""
    return _CLAUDE.get(tool, tool)


def select(hooks: Mapping[HookEvent, list[HookMatcher]], event: HookEvent,
           tool: str | None = None) -> list[HookCommand]:
    """The commands to run for ``event`` (on corral tool ``tool``), in order."""
    out: list[HookCommand] = []
    for matcher in hooks.get(event, []):
        if tool is None or _matches(matcher.matcher, claude_name(tool)):
            out += [h for h in matcher.hooks if h.type == "command"]
    return out


def payload(event: HookEvent, *, session_id: str, cwd: str, **fields: Any) -> bytes:
    """The JSON document a hook reads on stdin (``tool_name`` given as corral's is renamed)."""
    body: dict[str, Any] = {"session_id": session_id, "transcript_path": "", "cwd": cwd,
                            "hook_event_name": event}
    if "tool_name" in fields:
        fields["tool_name"] = claude_name(fields["tool_name"])
    body.update(fields)
    return json.dumps(body, ensure_ascii=False, default=str).encode()


def interpret(command: str, *, exit_code: int | None, stdout: str, stderr: str,
              timed_out: bool) -> HookOutcome:
    """The meaning of one finished run (see the module docstring)."""
    if timed_out:
        return HookOutcome(warning=f"hook {command!r} timed out and was killed")
    if exit_code == 2:
        return HookOutcome(block=True, reason=stderr.strip() or f"blocked by hook {command!r}")
    if exit_code != 0:
        return HookOutcome(warning=f"hook {command!r} failed (exit {exit_code}): "
                                   f"{stderr.strip()[:500]}")
    text = stdout.strip()
    if not text.startswith("{"):
        return HookOutcome()
    try:
        data = json.loads(text)
    except ValueError as exc:
        return HookOutcome(warning=f"hook {command!r} printed unreadable JSON: {exc}")
    if not isinstance(data, dict):
        return HookOutcome()
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    updated = specific.get("updatedInput")
    updated = updated if isinstance(updated, dict) else None
    if specific.get("permissionDecision") == "deny":
        return HookOutcome(block=True, reason=str(specific.get("permissionDecisionReason")
                                                  or f"denied by hook {command!r}"))
    if data.get("decision") == "block":
        return HookOutcome(block=True, reason=str(data.get("reason") or
                                                  f"blocked by hook {command!r}"))
    if data.get("continue") is False:
        return HookOutcome(block=True, reason=str(data.get("stopReason") or
                                                  f"stopped by hook {command!r}"))
    return HookOutcome(updated_input=updated)


def _matches(pattern: str, name: str) -> bool:
    if pattern in ("", "*"):
        return True
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error:
        return pattern == name
