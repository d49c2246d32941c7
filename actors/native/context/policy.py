"""Tool policies from frontmatter (``allowed-tools`` / ``tools`` / ``disallowed-tools``). Pure.

An instruction file (or a loaded skill) may restrict the tools of the session while it is
active. Each entry names a tool, optionally with an argument pattern: ``Read``, ``bash``,
``Bash(git diff:*)``, ``Edit(src/**)``. Claude's host names map onto corral's tools:

==========================  ======
Read                        read
Write                       write
Edit, MultiEdit             edit
Bash                        bash
Glob                        find
Grep                        grep
LS                          ls
==========================  ======

corral's own names (``read``, …) stand for themselves; any other name (an MCP tool) is kept as
written. Argument patterns: for ``bash`` the command — ``prefix:*`` matches commands starting
with ``prefix``, anything else is a glob (``*`` any text) over the whole command; for the file
tools the ``path`` argument, normalised and workspace-relative, against a path glob
(``actors.native.tools.globs``: ``src/**``). For other tools a pattern matches nothing.

Combination (``PolicySet``): every active policy with an allow list must allow a call (the
lists intersect: nested files only narrow), and any deny entry that matches refuses it — deny
wins. An explicit empty allow list allows nothing. ``visible`` says which tools the model is
shown: a tool denied without a pattern, or absent from some allow list, is hidden; a tool
allowed only with patterns stays visible, and ``check`` refuses the calls that do not match.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from actors.native.tools.globs import compile_glob

from .frontmatter import Frontmatter, as_list

__all__ = ["HOST_NAMES", "PolicySet", "ToolPolicy", "ToolRule", "parse_policy", "tool_name"]

HOST_NAMES: Mapping[str, str] = {
    "Read": "read", "Write": "write", "Edit": "edit", "MultiEdit": "edit", "Bash": "bash",
    "Glob": "find", "Grep": "grep", "LS": "ls",
}
_PATH_TOOLS = frozenset({"read", "write", "edit", "grep", "find", "ls"})


class ToolRule(msgspec.Struct, frozen=True):
    """One entry: a tool and, optionally, the pattern its argument must match."""

    tool: str
    pattern: str | None = None


class ToolPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """One file's policy and where it came from. ``allow`` ``None``: no allow list."""

    source: str
    allow: tuple[ToolRule, ...] | None = None
    deny: tuple[ToolRule, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the policy restricts nothing."""
        return self.allow is None and not self.deny


def tool_name(name: str) -> str:
    """A host's tool name as corral's (see the table in the module docstring)."""
    return HOST_NAMES.get(name, name)


def parse_policy(fields: Frontmatter, source: str) -> ToolPolicy:
    """The policy of one file's frontmatter (``source`` names the file in refusals)."""
    allow: tuple[ToolRule, ...] | None = None
    for key in ("allowed-tools", "allowed_tools", "allowedTools", "tools"):
        if key in fields:
            rules = tuple(_rule(entry) for entry in as_list(fields[key]))
            allow = rules if allow is None else tuple(r for r in rules if _covered(r, allow))
    deny: list[ToolRule] = []
    for key in ("disallowed-tools", "disallowed_tools", "disallowedTools"):
        deny += [_rule(entry) for entry in as_list(fields.get(key))]
    return ToolPolicy(source=source, allow=allow, deny=tuple(deny))


class PolicySet:
    """The policies active now, combined (see the module docstring)."""

    def __init__(self, policies: Iterable[ToolPolicy] = ()) -> None:
        self.policies = [p for p in policies if not p.empty]

    def visible(self, tools: Iterable[str]) -> list[str]:
        """The subset of ``tools`` the model may be shown, in their order."""
        return [t for t in tools if self._shown(t)]

    def check(self, tool: str, args: Mapping[str, Any]) -> str | None:
        """``None`` if the call may run, else the reason it may not (for the model)."""
        for policy in self.policies:
            for rule in policy.deny:
                if rule.tool == tool and _matches(rule, args):
                    return f"{tool} is denied here by {policy.source}"
            if policy.allow is not None and not any(
                    rule.tool == tool and _matches(rule, args) for rule in policy.allow):
                return f"{tool} with these arguments is not allowed here by {policy.source}"
        return None

    def _shown(self, tool: str) -> bool:
        for policy in self.policies:
            if any(rule.tool == tool and rule.pattern is None for rule in policy.deny):
                return False
            if policy.allow is not None and not any(rule.tool == tool for rule in policy.allow):
                return False
        return True


def _rule(entry: str) -> ToolRule:
    entry = entry.strip()
    name, paren, rest = entry.partition("(")
    if paren and rest.endswith(")"):
        return ToolRule(tool_name(name.strip()), rest[:-1].strip() or None)
    return ToolRule(tool_name(entry))


def _covered(rule: ToolRule, allow: tuple[ToolRule, ...]) -> bool:
    return any(other.tool == rule.tool for other in allow)


def _matches(rule: ToolRule, args: Mapping[str, Any]) -> bool:
    if rule.pattern is None:
        return True
    if rule.tool == "bash":
        command = str(args.get("command", "")).strip()
        if rule.pattern.endswith(":*"):
            prefix = rule.pattern[:-2].strip()
            return command == prefix or command.startswith(prefix + " ")
        return fnmatch.fnmatchcase(command, rule.pattern)
    if rule.tool in _PATH_TOOLS:
        path = posixpath.normpath(str(args.get("path", ".")).replace("\\", "/"))
        pattern = rule.pattern.removeprefix("./")
        return compile_glob(pattern).fullmatch(path) is not None
    return False
