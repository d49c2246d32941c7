"""The directory walk behind grep, find and ls: sorted, gitignore-aware, never through symlinks.

Entries come depth-first with the names of each directory in code-point order, so the same tree
always gives the same output. ``.git`` is always skipped. The ignore rules that apply to a
directory are ``.git/info/exclude`` at the root and every ``.gitignore`` from the root down to
it (a walk that starts below the root still honours its ancestors' files). A symlink is
reported as a ``symlink`` entry and never entered or read, whatever it points at. The walk
stops after ``max_entries`` entries (``truncated``) or when ``stop`` is set.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, NamedTuple

from .gitignore import IgnoreRule, is_ignored, parse_gitignore

Kind = Literal["file", "dir", "symlink", "other"]
_MAX_IGNORE_FILE = 1024 * 1024


class Entry(NamedTuple):
    """One directory entry: its path relative to the root (``/``-separated) and its kind."""

    rel: str
    path: Path
    kind: Kind


class TreeWalk:
    """A walk of ``start`` (a directory inside ``root``); iterate it, then read ``truncated``."""

    def __init__(self, root: Path, start: Path, *, max_entries: int, stop: threading.Event | None = None) -> None:
        self.root = root
        self.start = start
        self.max_entries = max_entries
        self.stop = stop or threading.Event()
        self.truncated = False
        self.ignored = 0
        """Entries left out because of ignore rules (counted only where they were met)."""

    def __iter__(self) -> Iterator[Entry]:
        visited = 0
        stack = [(iter(self._children(self.start)), self._rules_down_to(self.start))]
        while stack:
            children, rules = stack[-1]
            entry = next(children, None)
            if entry is None:
                stack.pop()
                continue
            if self.stop.is_set() or visited >= self.max_entries:
                self.truncated = True
                return
            visited += 1
            if is_ignored(entry.rel, entry.kind == "dir", rules):
                self.ignored += 1
                continue
            yield entry
            if entry.kind == "dir":
                stack.append((iter(self._children(entry.path)), rules + self._own_rules(entry.path)))

    def listing(self) -> list[Entry]:
        """The direct children of ``start`` that are not ignored (at most ``max_entries``)."""
        rules = self._rules_down_to(self.start)
        shown: list[Entry] = []
        for entry in self._children(self.start):
            if is_ignored(entry.rel, entry.kind == "dir", rules):
                self.ignored += 1
            elif len(shown) >= self.max_entries:
                self.truncated = True
            else:
                shown.append(entry)
        return shown

    def _children(self, directory: Path) -> list[Entry]:
        try:
            with os.scandir(directory) as it:
                found = sorted(it, key=lambda e: e.name)
        except OSError:
            return []  # unreadable or vanished: nothing to show, not a reason to fail the call
        prefix = "" if directory == self.root else directory.relative_to(self.root).as_posix() + "/"
        return [Entry(prefix + e.name, Path(e.path), _kind(e)) for e in found if e.name != ".git"]

    def _rules_down_to(self, directory: Path) -> list[IgnoreRule]:
        rules = parse_gitignore(_read_small(self.root / ".git" / "info" / "exclude"), "")
        chain = [directory, *directory.parents]
        for folder in reversed(chain[: chain.index(self.root) + 1]):
            rules += self._own_rules(folder)
        return rules

    def _own_rules(self, directory: Path) -> list[IgnoreRule]:
        base = "" if directory == self.root else directory.relative_to(self.root).as_posix()
        return parse_gitignore(_read_small(directory / ".gitignore"), base)


def _kind(entry: os.DirEntry[str]) -> Kind:
    try:
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError:
        return "other"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def _read_small(path: Path) -> str:
    """An ignore file's text, or "" if it is absent, a symlink, huge or unreadable."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_IGNORE_FILE:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
