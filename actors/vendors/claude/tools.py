"""Claude Code tool names → coarse kinds, tool-result content → output, permission updates.

Kinds let clients render and policies auto-answer without a per-vendor name table. Names not
listed are ``other``; every ``mcp__<server>__<tool>`` is ``mcp``.
"""

from __future__ import annotations

from typing import Any

from protocol.events import ToolKind

__all__ = ["always_rules", "tool_kind", "tool_output"]

_KINDS: dict[str, ToolKind] = {
    "Bash": "exec", "BashOutput": "exec", "KillShell": "exec", "KillBash": "exec",
    "Read": "read", "NotebookRead": "read", "LS": "read",
    "Glob": "search", "Grep": "search", "WebSearch": "search", "ToolSearch": "search",
    "Edit": "edit", "MultiEdit": "edit", "Write": "edit", "NotebookEdit": "edit",
}

_RULE_TYPES = frozenset({"addRules", "addDirectories"})


def tool_kind(name: str) -> ToolKind:
    """The coarse kind of a Claude tool name."""
    if name.startswith("mcp__"):
        return "mcp"
    return _KINDS.get(name, "other")


def tool_output(content: Any) -> Any:
    """A ``tool_result``'s content as corral shows it: its text, joined; non-text parts named."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict):
                parts.append(f"[{part.get('type', 'content')}]")
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return content


def always_rules(tool_name: str, suggestions: list[Any]) -> list[Any]:
    """The ``updatedPermissions`` of an allow_always answer.

    The CLI's own suggestions (the rules its interactive "don't ask again" would add) are used,
    narrowed to rules and directories (never a mode switch), and scoped to the session: rules
    written to the project's ``.claude/settings.local.json`` are ignored by ``-p`` in a workspace
    that was never trusted interactively, and corral should not edit the user's project. Without
    a usable suggestion the whole tool is allowed for the session.
    """
    rules = [
        {**s, "destination": "session"}
        for s in suggestions
        if isinstance(s, dict) and s.get("type") in _RULE_TYPES
    ]
    if any(r.get("type") == "addRules" for r in rules):
        return rules
    return [*rules, {"type": "addRules", "rules": [{"toolName": tool_name}],
                     "behavior": "allow", "destination": "session"}]
