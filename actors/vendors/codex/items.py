"""Codex thread items as normalized ``tool`` events: the name, coarse kind, input and output.

=====================  ==================  ======  =========================================
item type              tool name           kind    input → output
=====================  ==================  ======  =========================================
``commandExecution``   ``shell``           exec    command, cwd → aggregated output
``fileChange``         ``apply_patch``     edit    changes (path, kind, diff) → —
``mcpToolCall``        ``mcp__S__T``       mcp     arguments → result (or the error message)
``webSearch``          ``web_search``      search  query, action → results
``imageView``          ``view_image``      read    path → —
``dynamicToolCall``    the tool's name     other   arguments → content items
anything else          the item type       other   — (a kind Codex adds later)
=====================  ==================  ======  =========================================

Messages, reasoning, plans and the like are not tools (``NOT_TOOLS``). MCP tools are named
``mcp__<server>__<tool>`` as in Claude Code, so one ``allow_tools`` pattern serves both.
A tool is an error when its status is ``failed`` or ``declined``, a command exited non-zero, or
an MCP/dynamic call reported failure.
"""

from __future__ import annotations

from typing import Any

from protocol.events import Tool, ToolKind, ToolPhase

from .messages import Item

NOT_TOOLS = frozenset({
    "userMessage", "agentMessage", "reasoning", "plan", "hookPrompt", "contextCompaction",
    "enteredReviewMode", "exitedReviewMode", "functionCallOutput", "subAgentActivity", "sleep",
})
"""Item types that are conversation, not tool calls."""

_NAMES: dict[str, tuple[str, ToolKind]] = {
    "commandExecution": ("shell", "exec"),
    "fileChange": ("apply_patch", "edit"),
    "webSearch": ("web_search", "search"),
    "imageView": ("view_image", "read"),
}


def tool_name(item: Item) -> tuple[str, ToolKind]:
    """The normalized tool name and coarse kind of a tool item."""
    if item.type == "mcpToolCall":
        return f"mcp__{item.server or 'unknown'}__{item.tool or 'unknown'}", "mcp"
    if item.type == "dynamicToolCall" and isinstance(item.tool, str):
        return item.tool, "other"
    return _NAMES.get(item.type, (item.type, "other"))


def tool_event(item: Item, phase: ToolPhase) -> Tool:
    """The ``tool`` event for a tool item at ``phase`` (``started`` or ``completed``)."""
    name, kind = tool_name(item)
    done = phase == "completed"
    return Tool(call_id=item.id, name=name, kind=kind, phase=phase, input=tool_input(item),
                output=_output(item) if done else None, is_error=done and _failed(item))


def tool_input(item: Item) -> Any:
    """What the tool was asked to do, as plain JSON data."""
    match item.type:
        case "commandExecution":
            return _compact({"command": item.command, "cwd": item.cwd})
        case "fileChange":
            return {"changes": item.changes}
        case "mcpToolCall" | "dynamicToolCall":
            return item.arguments
        case "webSearch":
            return _compact({"query": item.query, "action": item.action})
        case "imageView":
            return _compact({"path": item.path})
    return None


def _output(item: Item) -> Any:
    match item.type:
        case "commandExecution":
            return item.aggregated_output
        case "mcpToolCall":
            if isinstance(item.error, dict) and "message" in item.error:
                return item.error["message"]
            return item.result
        case "webSearch":
            return item.results
        case "dynamicToolCall":
            return item.content_items
    return None


def _failed(item: Item) -> bool:
    if item.status in ("failed", "declined"):
        return True
    if item.type == "commandExecution":
        return item.exit_code not in (None, 0)
    if item.type == "mcpToolCall":
        return item.error is not None
    if item.type == "dynamicToolCall":
        return item.success is False
    return False


def _compact(fields: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}
