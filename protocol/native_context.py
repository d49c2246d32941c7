"""What the native worker is told about instruction files and skills (part of ``start``).

The daemon fills these from its ``[native]`` configuration; the worker discovers the files
itself, in the session's cwd and home. Defaults are what a session gets with no configuration.
"""

from __future__ import annotations

import msgspec

__all__ = ["ContextSettings"]


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
