"""A session's permission policy: answers what it can, leaves the rest to the attached clients.

* ``ask``       only tools matching ``allow_tools`` are allowed; the rest go to clients.
* ``auto_edit`` reads and edits inside the session are allowed; the rest go to clients.
* ``auto``      everything is allowed.
* ``inherit``   the harness's own configuration decides; what still reaches us goes to clients.
``allow_tools`` patterns are shell-style globs on the tool name (``mcp__fs__*``) and apply in
every mode. ``allow_always`` answers add the tool to a per-session allow set.
"""

from __future__ import annotations

import fnmatch

from protocol.events import Decision, Permission
from protocol.models import Permissions


class Policy:
    """Decides permission requests that need no human; remembers ``allow_always`` answers."""

    def __init__(self, permissions: Permissions) -> None:
        self.permissions = permissions
        self._always: set[str] = set()

    def decide(self, request: Permission) -> Decision | None:
        """The policy's answer to ``request``, or ``None`` when a client must decide."""
        mode = self.permissions.mode
        if mode == "auto":
            return "allow"
        if request.tool in self._always:
            return "allow"
        if any(fnmatch.fnmatchcase(request.tool, p) for p in self.permissions.allow_tools):
            return "allow"
        if mode == "auto_edit" and request.kind in ("read", "edit"):
            return "allow"
        return None

    def remember(self, request: Permission, decision: Decision) -> None:
        """Record a client's answer; ``allow_always`` allows the same tool from now on."""
        if decision == "allow_always":
            self._always.add(request.tool)
