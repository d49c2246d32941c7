"""What the native worker is told about instruction files and skills (part of ``start``).

The daemon fills these from its ``[native]`` configuration; the worker discovers the files
itself, in the session's cwd and home. Defaults are what a session gets with no configuration.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = ["ContextSettings", "HookCommand", "HookEvent", "HookMatcher", "SubagentDef"]

HookEvent = Literal["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "PreCompact"]
"""The hook events of native sessions, named as in Claude Code's settings."""


class HookCommand(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """One command hook: run with ``/bin/sh -c`` in the session's cwd, the event as JSON on
    stdin, killed (with its process group) after ``timeout`` seconds."""

    type: Literal["command"] = "command"
    command: str
    timeout: float = 60.0


class HookMatcher(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Hooks for the tools whose Claude name matches ``matcher`` (a regular expression over the
    whole name; empty or ``*``: every tool; ignored by events without a tool)."""

    matcher: str = ""
    hooks: list[HookCommand] = []


class SubagentDef(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """One named subagent (``[native.subagents.NAME]``): a tool of the same name runs it on a task.

    ``tools`` ``None``: every tool of the session, subagents included; else only those named
    (Claude's names such as ``Read`` are accepted). ``model`` ``None`` or ``inherit``: the
    session's model; a ``PROVIDER/NAME`` of the session's provider: that model."""

    description: str = ""
    instructions: str = ""
    tools: list[str] | None = None
    model: str | None = None


class ContextSettings(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """Instruction discovery and skills of one native session."""

    instructions: bool = True
    """Read the instruction files other agents use (AGENTS.md, CLAUDE.md, Copilot's)."""
    import_roots: list[str] = []
    """Directories Claude ``@path`` imports may also reach (besides the workspace and home)."""
    max_file_bytes: int = 64 * 1024
    """A larger instruction, import or skill resource file is skipped with a warning."""
    max_bytes: int = 128 * 1024
    """The assembled instructions' budget: least-specific files are evicted first."""
    max_import_depth: int = 5
    skill_roots: list[str] = []
    """Directories of skills (``NAME/SKILL.md``) configured for corral itself."""
    foreign_skills: bool = True
    """Also read, read-only, the skills of the user's Claude Code, Codex and Copilot."""
    trusted_roots: list[str] = []
    """Repositories whose own skills (``.claude/skills`` and the like) the model may use."""
    hooks: dict[HookEvent, list[HookMatcher]] = {}
    """Command hooks in the shape of Claude Code's settings ``hooks`` object."""
    claude_hooks: bool = False
    """Also run the hooks of the repository's ``.claude/settings.json``."""
    subagents: dict[str, SubagentDef] = {}
    """Named subagents; those of ``.claude/agents`` and ``.codex/agents`` files are added."""
    agent_files: bool = True
    """Also read subagents from ``~/.claude/agents``, ``~/.codex/agents`` and the repository's."""
    subagent_depth: Annotated[int, msgspec.Meta(ge=0, le=8)] = 2
    """How deep subagents may call subagents (2: the session's subagents and theirs)."""
