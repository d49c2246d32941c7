"""What a worktree changed: a snapshot of its files as a git tree, and the diff against its base.

A **snapshot** is the tree the worktree would commit if everything in it were added: committed,
staged, unstaged and untracked (not ignored) files alike. It is built in a scratch index
(``<home>/index``, seeded from the worktree's own index so that unchanged files are not hashed
again) with ``GIT_INDEX_FILE``, so the agent's index, its staged changes and its files are never
touched; the only trace is new objects in the repository's object store.

Diffs are taken between the base commit and a snapshot with the plumbing ``diff-tree``
(unaffected by the user's ``diff.*`` settings), renames off, so every file is ``added``,
``modified`` or ``deleted``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import trio

from actors.workspace.git import Git
from actors.workspace.records import WorkspaceRecord
from protocol.models import FileChange, FileStatus

__all__ = ["TRUNCATED", "bound_diff", "file_changes", "parse_changes", "snapshot", "unified_diff"]

TRUNCATED = "[diff truncated: {} more bytes]"
"""The last line of a diff that was cut at the byte limit."""

_STATUS: dict[str, FileStatus] = {"A": "added", "D": "deleted", "M": "modified", "T": "modified"}


async def snapshot(git: Git, record: WorkspaceRecord) -> str:
    """The tree (its hash) of everything in the worktree now, untracked files included."""
    scratch = Path(record.home) / "index"
    await trio.to_thread.run_sync(_seed, Path(record.git_dir) / "index", scratch)
    env = {"GIT_INDEX_FILE": str(scratch)}
    await git.run(record.path, "add", "--all", env=env)
    return (await git.run(record.path, "write-tree", env=env)).text


async def file_changes(git: Git, record: WorkspaceRecord, tree: str) -> list[FileChange]:
    """Every file that differs between the base and ``tree``, with its line counts."""
    found = await git.run(record.path, "diff-tree", "-r", "-z", "--raw", "--numstat",
                          "--no-renames", record.base, tree)
    return parse_changes(found.out)


async def unified_diff(git: Git, record: WorkspaceRecord, tree: str, limit: int) -> tuple[str, bool]:
    """The unified diff from the base to ``tree``, cut at ``limit`` bytes; and whether it was cut."""
    found = await git.run(record.path, "diff-tree", "-r", "-p", "--no-renames", "--no-color",
                          "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/",
                          record.base, tree, limit=limit)
    return bound_diff(found.out, found.dropped)


def parse_changes(raw: bytes) -> list[FileChange]:
    """Parse ``diff-tree -z --raw --numstat`` output (raw records first, then the counts).

    A binary file's counts (``-``) are 0. Paths are decoded as UTF-8, undecodable bytes replaced.
    """
    tokens = raw.split(b"\0")
    statuses: dict[str, FileStatus] = {}
    counts: dict[str, tuple[int, int]] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.startswith(b":") and i + 1 < len(tokens):
            letter = token.split()[-1][:1].decode()
            statuses[_path(tokens[i + 1])] = _STATUS.get(letter, "modified")
            i += 2
            continue
        added, tab, rest = token.partition(b"\t")
        removed, tab2, name = rest.partition(b"\t")
        if tab and tab2:
            counts[_path(name)] = (_count(added), _count(removed))
        i += 1
    return [FileChange(path=path, status=status, added=counts.get(path, (0, 0))[0],
                       removed=counts.get(path, (0, 0))[1])
            for path, status in statuses.items()]


def bound_diff(kept: bytes, dropped: int) -> tuple[str, bool]:
    """The diff text of ``kept`` (the first bytes) when ``dropped`` more were left out.

    A cut diff ends at the last whole line that fit, followed by the line ``[diff truncated: N
    more bytes]`` (N counts every byte left out, the partial line included).
    """
    if dropped == 0:
        return kept.decode("utf-8", "replace"), False
    cut = kept.rfind(b"\n") + 1
    more = dropped + len(kept) - cut
    return kept[:cut].decode("utf-8", "replace") + TRUNCATED.format(more), True


def _seed(index: Path, scratch: Path) -> None:
    try:
        shutil.copyfile(index, scratch)
    except FileNotFoundError:
        scratch.unlink(missing_ok=True)  # no index yet: start from an empty one
        return
    os.chmod(scratch, 0o600)


def _path(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _count(text: bytes) -> int:
    return int(text) if text.isdigit() else 0
