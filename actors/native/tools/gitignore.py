"""The subset of gitignore the walks honour, parsed from ``.gitignore`` text.

Supported: comments, blank lines, trailing-space trimming (unless escaped), ``!`` negation
(the last matching rule wins), a trailing ``/`` for directories only, anchoring (a ``/`` at
the start or in the middle ties the pattern to the ``.gitignore``'s directory; otherwise it
matches a name at any depth below it), and the glob syntax of ``globs``. As in git, a file in
an ignored directory cannot be re-included: the walk never enters that directory. Rules that
do not compile are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from .globs import compile_glob


class IgnoreRule(NamedTuple):
    """One pattern line, tied to ``base``: the directory of its file relative to the root."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool
    base: str


def parse_gitignore(text: str, base: str) -> list[IgnoreRule]:
    """The rules of one ignore file found in directory ``base`` ("" for the workspace root)."""
    rules = []
    for raw in text.splitlines():
        line = raw
        while line.endswith(" ") and not line.endswith("\\ "):
            line = line[:-1]
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        try:
            regex = compile_glob(line.removeprefix("/"))
        except re.error:
            continue
        rules.append(IgnoreRule(regex, negate, dir_only, anchored, base))
    return rules


def is_ignored(rel: str, is_dir: bool, rules: Sequence[IgnoreRule]) -> bool:
    """Whether ``rel`` (relative to the root) is ignored; ``rules`` ordered shallow to deep."""
    ignored = False
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        if rule.base:
            if not rel.startswith(rule.base + "/"):
                continue
            sub = rel[len(rule.base) + 1 :]
        else:
            sub = rel
        if rule.regex.fullmatch(sub if rule.anchored else sub.rsplit("/", 1)[-1]):
            ignored = not rule.negate
    return ignored
