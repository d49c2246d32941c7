"""Which coding tools ask before they run, by the session's permission policy (pure).

=============  ========================================
mode           asks before
=============  ========================================
``ask``        write, edit, bash
``inherit``    write, edit, bash (the worker has no configuration of its own to inherit)
``auto_edit``  bash
``auto``       nothing
=============  ========================================

read, grep, find, ls and diagnostics never ask. MCP tools (``mcp__SERVER__TOOL``, run by
servers the agent cannot see into) ask in ``ask``, ``inherit`` and ``auto_edit``. A tool whose
name matches an ``allow_tools`` glob (``mcp__fs__*``) never asks, nor does one the user answered
``allow_always`` for during this worker's life (the daemon remembers it too, across restarts).
"""

from __future__ import annotations

import fnmatch

from protocol.models import Permissions

__all__ = ["MCP_PREFIX", "AskRules"]

MCP_PREFIX = "mcp__"
"""Names of MCP tools start with it (``mcp__SERVER__TOOL``)."""

_MCP_ASKS = frozenset({"ask", "inherit", "auto_edit"})
_ASKING: dict[str, frozenset[str]] = {
    "ask": frozenset({"write", "edit", "bash"}),
    "inherit": frozenset({"write", "edit", "bash"}),
    "auto_edit": frozenset({"bash"}),
    "auto": frozenset(),
}


class AskRules:
    """Answers ``asks(tool)`` for one session."""

    def __init__(self, permissions: Permissions) -> None:
        self._asking = _ASKING[permissions.mode]
        self._mcp_asks = permissions.mode in _MCP_ASKS
        self._allowed = list(permissions.allow_tools)
        self._always: set[str] = set()

    def asks(self, tool: str) -> bool:
        """Whether running ``tool`` needs the user's approval first."""
        asking = self._mcp_asks if tool.startswith(MCP_PREFIX) else tool in self._asking
        if not asking or tool in self._always:
            return False
        return not any(fnmatch.fnmatchcase(tool, pattern) for pattern in self._allowed)

    def allow_always(self, tool: str) -> None:
        """The user allowed ``tool`` for the rest of the session."""
        self._always.add(tool)
