"""Agent Skills (``NAME/SKILL.md``) a native session may use: discovery, merging, resolution.

Theory of operation. ``discover_skills`` reads, with bounded file I/O and never running
anything, each skill directory of these roots (``host:scope``):

=====================  =====================================================  ===============
``corral:config``      each ``[native] skill_roots`` entry                    always trusted
``claude:user``        ``~/.claude/skills``                                   read-only
``claude:plugin``      ``skills/`` of each plugin in Claude's installed-plugin  read-only
                       index (``~/.claude/plugins/installed_plugins.json``,
                       version 2), unless ``enabledPlugins`` in
                       ``~/.claude/settings.json`` turns it off; the name is
                       ``PLUGIN:SKILL`` as in Claude
``codex:user``         ``$CODEX_HOME/skills`` (default ``~/.codex/skills``)   read-only
``copilot:user``       ``~/.copilot/skills``                                  read-only
``claude|codex|``      ``.claude/skills``, ``.codex/skills``,                  only under an
``copilot:repo``       ``.github/skills`` of the repository root              exact trusted root
=====================  =====================================================  ===============

``foreign_skills = false`` keeps only ``corral:config``. A ``SKILL.md`` needs a ``description``
in its frontmatter (else ``skills.invalid``); ``name`` defaults to the directory's name. Each
record keeps the SHA-256 of its ``SKILL.md`` bytes and its resource files (bounded listing).

``Catalog`` merges records by name: the same name with the same bytes is one skill with every
record as provenance (its first record serves the body); different bytes make the name
ambiguous (``skills.ambiguous`` warning), and only the qualified ``host:scope:name`` of a
record selects it. When merged records have different resources, a resource needs the
qualified name. Only model-invocable records (trusted, and not ``disable-model-invocation:
true``) are offered to the model; ``corral skills`` shows them all.

``read_body`` checks the file against the discovery digest (``skills.digest_mismatch``);
``read_resource`` reads a bounded UTF-8 regular file whose real path is under the skill root.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

import msgspec

from protocol.native_context import ContextSettings

from .documents import ContextWarning, read_text
from .frontmatter import split_frontmatter
from .policy import ToolPolicy, parse_policy

__all__ = ["Catalog", "SkillError", "SkillRecord", "discover_skills"]

_MAX_SKILLS_PER_ROOT = 200
_MAX_RESOURCES = 200
_MAX_RESOURCE_DEPTH = 4


class SkillError(Exception):
    """A skill or resource the model asked for cannot be served; ``code`` is stable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class SkillRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One ``SKILL.md`` as found in one root."""

    host: str
    scope: str
    name: str
    description: str
    path: str
    root: str
    digest: str
    trusted: bool
    invocable: bool
    resources: tuple[str, ...] = ()

    @property
    def qualified(self) -> str:
        """``host:scope:name``, which always names this record alone."""
        return f"{self.host}:{self.scope}:{self.name}"


class Catalog:
    """The session's skills, immutable once discovered (see the module docstring)."""

    def __init__(self, records: list[SkillRecord], warnings: list[ContextWarning]) -> None:
        self.records = records
        self.warnings = warnings
        self._by_name: dict[str, list[SkillRecord]] = {}
        for record in records:
            self._by_name.setdefault(record.name, []).append(record)
        for name, group in self._by_name.items():
            if len({r.digest for r in group}) > 1:
                qualified = ", ".join(r.qualified for r in group)
                warnings.append(ContextWarning(
                    code="skills.ambiguous", path=group[0].path,
                    message=f"skills named {name!r} differ ({qualified}); use the qualified name"))

    def invocable(self) -> list[dict[str, object]]:
        """What ``list_skills`` shows the model: merged names, or qualified ones if ambiguous."""
        out: list[dict[str, object]] = []
        for name, group in self._by_name.items():
            usable = [r for r in group if r.invocable]
            if not usable:
                continue
            if len({r.digest for r in group}) == 1:
                out.append({"name": name, "description": usable[0].description,
                            "sources": [r.qualified for r in usable]})
            else:
                out += [{"name": r.qualified, "description": r.description,
                         "sources": [r.qualified]} for r in usable]
        return out

    def resolve(self, name: str, *, model: bool = True) -> list[SkillRecord]:
        """The records ``name`` selects (first serves the body); ``SkillError`` if none, or if
        an unqualified name is ambiguous. ``model``: only model-invocable records count."""
        pool = [r for r in self.records if r.invocable or not model]
        exact = [r for r in pool if r.qualified == name]
        if exact:
            return exact
        group = [r for r in pool if r.name == name]
        if not group:
            raise SkillError("skills.unknown", f"there is no skill {name!r}; see list_skills")
        if len({r.digest for r in self._by_name[name]}) > 1:
            choices = ", ".join(r.qualified for r in group)
            raise SkillError("skills.ambiguous",
                             f"several different skills are named {name!r}: {choices}; "
                             "name one of them")
        return group

    def read_body(self, name: str, max_bytes: int) -> tuple[SkillRecord, str, ToolPolicy]:
        """The skill's instructions (``SKILL.md`` after its frontmatter), checked against the
        digest taken at discovery, and the tool policy of its frontmatter (``allowed-tools``)."""
        record = self.resolve(name)[0]
        try:
            data = _read_bytes(Path(record.path), max_bytes)
        except OSError as exc:
            raise SkillError("skills.unreadable", f"{record.path}: {exc.strerror or exc}") from None
        if hashlib.sha256(data).hexdigest() != record.digest:
            raise SkillError("skills.digest_mismatch",
                             f"{record.qualified} changed since the session started; "
                             "it is not loaded")
        fields, body = split_frontmatter(data.decode("utf-8", "replace"))
        return record, body.strip(), parse_policy(fields, f"the skill {record.qualified}")

    def read_resource(self, name: str, path: str, max_bytes: int) -> str:
        """A resource file of the skill: bounded UTF-8, confined under the skill's root."""
        records = self.resolve(name)
        if len({r.resources for r in records}) > 1:
            raise SkillError("skills.qualify_resources",
                             f"{name!r} comes from roots with different files; use one of "
                             f"{', '.join(r.qualified for r in records)}")
        root = os.path.realpath(records[0].root)
        target = os.path.realpath(os.path.join(root, path))
        if not target.startswith(root + os.sep):
            raise SkillError("skills.resource_outside", f"{path!r} is outside the skill")
        warnings: list[ContextWarning] = []
        text = read_text(Path(target), max_bytes, warnings)
        if text is None:
            why = warnings[0].message if warnings else "no such file"
            raise SkillError("skills.resource_invalid", f"{path}: {why}")
        return text


def discover_skills(settings: ContextSettings, *, home: Path | None, repo_root: Path,
                    environ: Mapping[str, str]) -> Catalog:
    """Every skill of the roots in the module docstring's table, with warnings."""
    warnings: list[ContextWarning] = []
    records: list[SkillRecord] = []

    def scan(folder: Path, host: str, scope: str, trusted: bool, prefix: str = "") -> None:
        records.extend(_scan(folder, host, scope, trusted, prefix, settings.max_file_bytes,
                             warnings))

    for root in settings.skill_roots:
        scan(Path(root).expanduser(), "corral", "config", True)
    if settings.foreign_skills:
        if home is not None:
            scan(home / ".claude" / "skills", "claude", "user", True)
            for plugin, folder in _claude_plugins(home, warnings):
                scan(folder / "skills", "claude", "plugin", True, prefix=plugin + ":")
            codex = environ.get("CODEX_HOME")
            scan((Path(codex) if codex else home / ".codex") / "skills", "codex", "user", True)
            scan(home / ".copilot" / "skills", "copilot", "user", True)
        real = os.path.realpath(repo_root)
        trusted = any(os.path.realpath(Path(t).expanduser()) == real
                      for t in settings.trusted_roots)
        for host, hidden in (("claude", ".claude"), ("codex", ".codex"), ("copilot", ".github")):
            scan(repo_root / hidden / "skills", host, "repo", trusted)
    return Catalog(records, warnings)


def _scan(folder: Path, host: str, scope: str, trusted: bool, prefix: str, max_bytes: int,
          warnings: list[ContextWarning]) -> list[SkillRecord]:
    try:
        entries = sorted(folder.iterdir())[:_MAX_SKILLS_PER_ROOT]
    except OSError:
        return []
    out: list[SkillRecord] = []
    for directory in entries:
        skill = directory / "SKILL.md"
        if not directory.is_dir() or not skill.is_file():
            continue
        try:
            data = _read_bytes(skill, max_bytes)
            fields, _ = split_frontmatter(data.decode("utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            warnings.append(ContextWarning(code="skills.unreadable", path=str(skill),
                                           message=f"{exc}; skipped"))
            continue
        name, description = fields.get("name"), fields.get("description")
        if not isinstance(description, str) or not description:
            warnings.append(ContextWarning(code="skills.invalid", path=str(skill),
                                           message="no description in its frontmatter; skipped"))
            continue
        name = name if isinstance(name, str) and name else directory.name
        manual = str(fields.get("disable-model-invocation", "")).lower() == "true"
        out.append(SkillRecord(
            host=host, scope=scope, name=prefix + name, description=description,
            path=str(skill), root=str(directory), digest=hashlib.sha256(data).hexdigest(),
            trusted=trusted, invocable=trusted and not manual, resources=_resources(directory)))
    return out


def _resources(root: Path) -> tuple[str, ...]:
    """The skill's other regular files, relative, sorted, bounded; symlinked dirs not entered."""
    found: list[str] = []
    for current, dirs, files in os.walk(root):
        depth = len(Path(current).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if depth < _MAX_RESOURCE_DEPTH)
        for name in sorted(files):
            relative = (Path(current) / name).relative_to(root).as_posix()
            if relative != "SKILL.md":
                found.append(relative)
            if len(found) >= _MAX_RESOURCES:
                return tuple(found)
    return tuple(found)


def _claude_plugins(home: Path, warnings: list[ContextWarning]) -> list[tuple[str, Path]]:
    """``(plugin name, install path)`` of Claude's enabled installed plugins."""
    index = home / ".claude" / "plugins" / "installed_plugins.json"
    text = read_text(index, 1 << 20, warnings)
    if text is None:
        return []
    settings = read_text(home / ".claude" / "settings.json", 1 << 20, warnings)
    try:
        data = json.loads(text)
        enabled = json.loads(settings).get("enabledPlugins", {}) if settings else {}
    except (ValueError, AttributeError) as exc:
        warnings.append(ContextWarning(code="skills.plugin_index", path=str(index),
                                       message=f"unreadable: {exc}"))
        return []
    plugins = data.get("plugins") if isinstance(data, dict) else None
    if not isinstance(plugins, dict) or data.get("version") != 2:
        warnings.append(ContextWarning(code="skills.plugin_index", path=str(index),
                                       message="not a version 2 plugin index; skipped"))
        return []
    out: list[tuple[str, Path]] = []
    for key, installs in sorted(plugins.items()):
        if not isinstance(enabled, dict) or enabled.get(key, True) is False:
            continue
        for install in installs if isinstance(installs, list) else []:
            path = install.get("installPath") if isinstance(install, dict) else None
            if isinstance(path, str) and path:
                out.append((key.partition("@")[0], Path(path)))
    return out


def _read_bytes(path: Path, max_bytes: int) -> bytes:
    """At most ``max_bytes`` of regular file ``path`` (a FIFO or device is refused unread)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(f"larger than {max_bytes} bytes")
    return data
