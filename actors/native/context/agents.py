"""Subagent definitions: corral's ``[native.subagents.NAME]`` tables plus the agent files the
user's other agents already use. Discovery reads files and never runs anything.

Agent files, least- to most-specific (a later definition of the same name replaces an earlier):

* ``~/.claude/agents/*.md``, ``~/.codex/agents/*.md`` (the user's), then the repository root's
  ``.claude/agents/*.md`` and ``.codex/agents/*.md``: frontmatter ``name`` (default: the file's
  stem), ``description``, ``tools`` (Claude's names such as ``Read`` become corral's) and
  ``model``; the body is the instructions;
* ``.codex/agents/*.toml`` in the same places: the keys ``name``, ``description``,
  ``instructions`` (or ``developer_instructions``), ``tools`` and ``model``.

The configured tables come last, so configuration wins over files. A file that cannot be read
or has no instructions is skipped with a ``subagents.*`` warning.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from protocol.native_context import ContextSettings, SubagentDef

from .documents import ContextWarning, read_text
from .frontmatter import as_list, split_frontmatter
from .policy import tool_name

__all__ = ["discover_subagents"]

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_MAX_FILES = 200


def discover_subagents(settings: ContextSettings, *, home: Path | None,
                       repo_root: Path | None) -> tuple[dict[str, SubagentDef],
                                                        list[ContextWarning]]:
    """The session's subagents by name, and the warnings of their discovery."""
    found: dict[str, SubagentDef] = {}
    warnings: list[ContextWarning] = []
    if settings.agent_files:
        for base in (home, repo_root):
            if base is None:
                continue
            for folder in (base / ".claude" / "agents", base / ".codex" / "agents"):
                found.update(_read_folder(folder, settings.max_file_bytes, warnings))
    for name, definition in settings.subagents.items():
        if _valid(name, str(name), warnings):
            found[name] = definition
    return found, warnings


def _read_folder(folder: Path, limit: int,
                 warnings: list[ContextWarning]) -> dict[str, SubagentDef]:
    try:
        paths = sorted(p for p in folder.iterdir() if p.suffix in (".md", ".toml"))[:_MAX_FILES]
    except OSError:
        return {}
    out: dict[str, SubagentDef] = {}
    for path in paths:
        text = read_text(path, limit, warnings)
        if not text:
            continue
        parsed = _from_toml(path, text, warnings) if path.suffix == ".toml" \
            else _from_markdown(path, text)
        if parsed is None:
            continue
        name, definition = parsed
        if not _valid(name, str(path), warnings):
            continue
        if not definition.instructions.strip():
            warnings.append(ContextWarning(code="subagents.empty", path=str(path),
                                           message="no instructions; subagent ignored"))
            continue
        out[name] = definition
    return out


def _from_markdown(path: Path, text: str) -> tuple[str, SubagentDef]:
    fields, body = split_frontmatter(text)
    return _scalar(fields.get("name")) or path.stem, SubagentDef(
        description=_scalar(fields.get("description")), instructions=body.strip(),
        tools=_tools(fields.get("tools")), model=_scalar(fields.get("model")) or None)


def _from_toml(path: Path, text: str,
               warnings: list[ContextWarning]) -> tuple[str, SubagentDef] | None:
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        warnings.append(ContextWarning(code="subagents.unreadable", path=str(path),
                                       message=f"not TOML: {exc}; subagent ignored"))
        return None
    instructions = table.get("instructions", table.get("developer_instructions", ""))
    tools = table.get("tools")
    return str(table.get("name") or path.stem), SubagentDef(
        description=str(table.get("description", "")), instructions=str(instructions),
        tools=_tools([str(t) for t in tools] if isinstance(tools, list) else tools),
        model=str(table["model"]) if table.get("model") else None)


def _tools(value: object) -> list[str] | None:
    """A ``tools`` field as corral's tool names; missing or empty: ``None`` (every tool)."""
    if not isinstance(value, (str, list)):
        return None
    names = [tool_name(n) for n in as_list(value)]
    return names or None


def _scalar(value: str | list[str] | None) -> str:
    return value.strip() if isinstance(value, str) else ""


def _valid(name: str, source: str, warnings: list[ContextWarning]) -> bool:
    if _NAME.match(name):
        return True
    warnings.append(ContextWarning(code="subagents.bad_name", path=source,
                                   message=f"subagent name {name!r} is not a tool name "
                                           "(a letter, then letters, digits, - or _)"))
    return False

