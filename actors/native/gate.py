"""Which coding tools ask before they run, by the session's permission policy (pure).

=============  ========================================
mode           asks before
=============  ========================================
``ask``        write, edit, bash
``inherit``    write, edit, bash (the worker has no configuration of its own to inherit)
``auto_edit``  bash
``auto``       nothing
=============  ========================================

read, grep, find and ls never ask. A tool whose name matches an ``allow_tools`` glob never asks,
nor does one the user answered ``allow_always`` for during this worker's life (the daemon
remembers it too, across restarts).
"""

from __future__ import annotations

import fnmatch

from protocol.models import Permissions

__all__ = ["Gate"]

_ASKING: dict[str, frozenset[str]] = {
    "ask": frozenset({"write", "edit", "bash"}),
    "inherit": frozenset({"write", "edit", "bash"}),
    "auto_edit": frozenset({"bash"}),
    "auto": frozenset(),
}


class Gate:
    """Answers ``asks(tool)`` for one session."""

    def __init__(self, permissions: Permissions) -> None:
        self._asking = _ASKING[permissions.mode]
        self._allowed = list(permissions.allow_tools)
        self._always: set[str] = set()

    def asks(self, tool: str) -> bool:
        """Whether running ``tool`` needs the user's approval first."""
        if tool not in self._asking or tool in self._always:
            return False
        return not any(fnmatch.fnmatchcase(tool, pattern) for pattern in self._allowed)

    def allow_always(self, tool: str) -> None:
        """The user allowed ``tool`` for the rest of the session."""
        self._always.add(tool)
