"""Which instruction files a session sees, and how specific each is. Bounded file reads only.

At session start (``Discovery.snapshot``), in order from least to most specific:

1. user files: ``$CODEX_HOME/AGENTS.md`` (default ``~/.codex``), ``~/.claude/CLAUDE.md``;
2. ancestors: the directories above the repository root, outermost first (never ``/``);
3. the repository root (the nearest ancestor of the cwd holding ``.git``; without one, the cwd
   itself, and no ancestors are read), then each directory down to the cwd.
   Each directory contributes ``AGENTS.md``, ``AGENT.md``, ``CLAUDE.md`` in that order; the
   root adds ``.github/copilot-instructions.md``, then ``.claude/rules/*.md`` and
   ``.github/instructions/*.instructions.md`` by name. A rule with ``paths`` (Claude) or an
   instructions file with ``applyTo`` (Copilot; ``**`` means always) is conditional: it
   activates once a touched path matches one of its globs (relative to the root; ``{a,b}``
   alternatives allowed). A Copilot file without ``applyTo`` is never applied automatically,
   as in Copilot.

Below the cwd, directory files are nested: ``Discovery.nested(path)`` reads the directories from
the cwd down to a touched path (the first time each is asked for) so they can activate.

Each ``Source`` carries its ``rank`` (a sort key: user < ancestor < root < deeper directories),
its document (with imports) and its tool policy. Imports of user files are confined to the
home, of ancestors to their own directory, of repository files to the root; configured import
roots are allowed for all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import msgspec

from actors.native.tools.globs import compile_glob
from protocol.native_context import ContextSettings

from .documents import ContextWarning, Document, load_document
from .frontmatter import as_list
from .policy import ToolPolicy, parse_policy

__all__ = ["DIR_FILES", "Discovery", "Source", "matches", "repo_root"]

DIR_FILES = ("AGENTS.md", "AGENT.md", "CLAUDE.md")
_MAX_ANCESTORS = 32
_MAX_RULES = 200


class Source(msgspec.Struct, frozen=True, kw_only=True):
    """One instruction file a session may see."""

    path: str
    label: str
    """How prompts and warnings name it: root-relative, ``~/``-relative, or absolute."""
    scope: str
    """``user``, ``ancestor``, ``project``, ``nested`` or ``rule``."""
    rank: tuple[int, int, int]
    document: Document
    policy: ToolPolicy
    globs: tuple[str, ...] = ()
    """For a conditional rule: the root-relative globs that activate it."""


class Discovery:
    """The instruction files of one session (see the module docstring)."""

    def __init__(self, cwd: Path, *, home: Path | None, settings: ContextSettings,
                 codex_home: Path | None = None, ceiling: Path | None = None) -> None:
        self.cwd = Path(os.path.realpath(cwd))
        self.root = repo_root(self.cwd, ceiling)
        self.home = Path(os.path.realpath(home)) if home is not None else None
        self.codex_home = codex_home or (self.home / ".codex" if self.home else None)
        self.settings = settings
        self.warnings: list[ContextWarning] = []
        self._imports = [Path(p).expanduser() for p in settings.import_roots]
        self._dirs_read: set[Path] = set()

    def snapshot(self) -> tuple[list[Source], list[Source]]:
        """``(active, conditional)``: the files active from the start, and the rules that wait
        for a matching touch. Each directory is read once."""
        active: list[Source] = []
        if self.home is not None:
            user = [p for p in (self.codex_home / "AGENTS.md" if self.codex_home else None,
                                self.home / ".claude" / "CLAUDE.md") if p is not None]
            for i, path in enumerate(user):
                active += self._load(path, "user", (0, i, 0), [self.home])
        if (self.root / ".git").exists():
            ancestors = list(self.root.parents)[:-1][:_MAX_ANCESTORS]  # never "/"
            for depth, directory in enumerate(reversed(ancestors)):
                active += self._directory(directory, "ancestor", (1, depth), [directory])
        conditional: list[Source] = []
        active += self._directory(self.root, "project", (2, 0), [self.root])
        active += self._load(self.root / ".github" / "copilot-instructions.md", "project",
                             (2, 0, 3), [self.root])
        for index, (path, key) in enumerate(self._rules()):
            for source in self._load(path, "rule", (2, 0, 4 + index), [self.root], key):
                (conditional if source.globs else active).append(source)
        between = self.cwd.relative_to(self.root).parts
        for depth in range(1, len(between) + 1):
            directory = self.root.joinpath(*between[:depth])
            active += self._directory(directory, "project", (2, depth), [self.root])
        return active, conditional

    def nested(self, touched: Path) -> list[Source]:
        """The directory files between the cwd (exclusive) and ``touched`` (a path under the
        cwd; a file's own directory is the last) not read before."""
        path = Path(os.path.normpath(self.cwd / touched))
        if path != self.cwd and not path.is_dir():
            path = path.parent
        try:
            below = path.relative_to(self.cwd).parts
        except ValueError:
            return []
        base = len(self.cwd.relative_to(self.root).parts)
        found: list[Source] = []
        for depth in range(1, min(len(below), _MAX_ANCESTORS) + 1):
            directory = self.cwd.joinpath(*below[:depth])
            found += self._directory(directory, "nested", (2, base + depth), [self.root])
        return found

    def relative(self, touched: Path) -> str:
        """``touched`` (under the cwd) as a root-relative ``/`` path, for rule globs."""
        path = Path(os.path.normpath(self.cwd / touched))
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    # --- internals --------------------------------------------------------------------

    def _directory(self, directory: Path, scope: str, rank: tuple[int, int],
                   roots: list[Path]) -> list[Source]:
        if directory in self._dirs_read:
            return []
        self._dirs_read.add(directory)
        found: list[Source] = []
        for k, name in enumerate(DIR_FILES):
            found += self._load(directory / name, scope, (*rank, k), roots)
        return found

    def _rules(self) -> list[tuple[Path, str]]:
        """Claude rules and Copilot instruction files at the root, with the frontmatter key of
        their globs."""
        out: list[tuple[Path, str]] = []
        for folder, suffix, key in ((self.root / ".claude" / "rules", ".md", "paths"),
                                    (self.root / ".github" / "instructions",
                                     ".instructions.md", "applyTo")):
            try:
                names = sorted(p.name for p in folder.iterdir() if p.name.endswith(suffix))
            except OSError:
                continue
            for name in names[:_MAX_RULES]:
                out.append((folder / name, key))
        return out

    def _load(self, path: Path, scope: str, rank: tuple[int, int, int], roots: list[Path],
              key: str | None = None) -> list[Source]:
        """``path`` as a source (none if unreadable); ``key`` names a rule's globs field: no
        globs, or ``**`` among them, is always active, but a Copilot file without ``applyTo``
        is left out."""
        document = load_document(path, roots=[*roots, *self._imports], home=self.home,
                                  max_file_bytes=self.settings.max_file_bytes,
                                  max_import_depth=self.settings.max_import_depth,
                                  warnings=self.warnings)
        if document is None:
            return []
        globs: tuple[str, ...] = ()
        if key is not None:
            patterns = as_list(document.fields.get(key))
            if key == "applyTo" and not patterns:
                return []
            globs = () if "**" in patterns else tuple(g for p in patterns for g in _braces(p))
        label = self._label(path)
        return [Source(path=str(path), label=label, scope=scope, rank=rank, document=document,
                       policy=parse_policy(document.fields, label), globs=globs)]

    def _label(self, path: Path) -> str:
        for base, prefix in ((self.root, ""), (self.home, "~/")):
            if base is not None and path.is_relative_to(base):
                return prefix + path.relative_to(base).as_posix()
        return str(path)


def repo_root(cwd: Path, ceiling: Path | None = None) -> Path:
    """The nearest directory from ``cwd`` up that holds ``.git`` (a directory or a file), else
    ``cwd``; the search does not go above ``ceiling`` (like ``GIT_CEILING_DIRECTORIES``)."""
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
        if ceiling is not None and directory == ceiling:
            break
    return cwd


def matches(globs: Sequence[str], relative: str) -> bool:
    """Whether root-relative ``relative`` matches one of ``globs``."""
    return any(compile_glob(g.removeprefix("./").removeprefix("/")).fullmatch(relative)
               for g in globs)


_BRACE = re.compile(r"\{([^{}]*)\}")


def _braces(pattern: str) -> list[str]:
    """``src/*.{ts,tsx}`` → ``src/*.ts``, ``src/*.tsx`` (bounded to 64 results)."""
    out: list[str] = []
    todo = [pattern]
    while todo and len(out) < 64:
        item = todo.pop(0)
        found = _BRACE.search(item)
        if found is None:
            out.append(item)
            continue
        todo += [item[:found.start()] + alt + item[found.end():]
                 for alt in found.group(1).split(",")]
    return out
