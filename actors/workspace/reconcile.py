"""The boot reconcile: worktrees under the workspaces root whose session is gone are removed.

A home ``<root>/<key>`` is pruned when its ``corral.json`` names this state directory and a
session whose directory ``sessions/<id>/`` no longer exists (deleted by hand, or a daemon that
died between making a worktree and creating its session). Its worktree directory, git's record
of it and the home go; its branch goes too unless it holds commits that no other local branch
holds — those are the user's work, kept and reported. Homes of another state directory (a root
shared by two daemons), homes without ``corral.json`` and unreadable ones are left alone.
Every pruned worktree is reported in the daemon log. The worktrees that stay get their branch
back as a plain ref where a sandbox had redirected it (``reflink``): no sandbox runs at boot
(the daemon that ran them is gone, and no session starts before the reconcile is done).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import msgspec
import trio

from actors.workspace.git import Git
from actors.workspace.records import Owner, read_owner
from actors.workspace.removal import (branch_exists, delete_branch, remove_worktree, unlink_branch,
                                      unmerged_commits)
from protocol.errors import StorageFailed

__all__ = ["Pruned", "reconcile"]

log = logging.getLogger("corral.workspaces")


class Pruned(msgspec.Struct, frozen=True, kw_only=True):
    """One worktree the reconcile removed; ``kept_commits`` > 0 when its branch was kept."""

    session_id: str
    path: str
    repo: str
    branch: str
    branch_deleted: bool
    kept_commits: int = 0


async def reconcile(git: Git, root: Path, state_dir: Path) -> list[Pruned]:
    """Prune the worktrees under ``root`` whose session is gone (see the module docstring)."""
    owners = await trio.to_thread.run_sync(_owners, root, state_dir)
    pruned: list[Pruned] = []
    for home, owner in owners:
        if (state_dir / "sessions" / owner.session_id).is_dir():
            if os.path.isdir(owner.common_dir):
                await unlink_branch(owner.common_dir, owner.branch)
            continue
        try:
            done = await _prune(git, home, owner)
        except Exception as exc:  # noqa: BLE001 - one bad worktree must not stop the others
            log.warning("workspaces: cannot prune the worktree %s of session %s: %s",
                        owner.path, owner.session_id, exc)
            continue
        pruned.append(done)
        if done.branch_deleted:
            branch = f"branch {done.branch} deleted"
        elif done.kept_commits:
            branch = f"branch {done.branch} kept: {done.kept_commits} commit(s) on no other branch"
        else:
            branch = f"branch {done.branch} was already gone"
        log.warning("workspaces: pruned the worktree %s of %s (session %s is gone); %s",
                    done.path, done.repo, done.session_id, branch)
    return pruned


async def _prune(git: Git, home: Path, owner: Owner) -> Pruned:
    await remove_worktree(git, owner.common_dir, owner.path, str(home), owner.branch)
    kept = 0
    deleted = False
    if os.path.isdir(owner.common_dir) and await branch_exists(git, owner.common_dir, owner.branch):
        kept = await unmerged_commits(git, owner.common_dir, owner.branch)
        if kept == 0:
            deleted = await delete_branch(git, owner.common_dir, owner.branch)
    return Pruned(session_id=owner.session_id, path=owner.path, repo=owner.repo,
                  branch=owner.branch, branch_deleted=deleted, kept_commits=kept)


def _owners(root: Path, state_dir: Path) -> list[tuple[Path, Owner]]:
    """Every home under ``root`` that belongs to ``state_dir`` (blocking)."""
    try:
        homes = sorted(entry for entry in root.iterdir() if entry.is_dir())
    except FileNotFoundError:
        return []
    ours = os.path.realpath(state_dir)
    found: list[tuple[Path, Owner]] = []
    for home in homes:
        try:
            owner = read_owner(home)
        except StorageFailed as exc:
            log.warning("workspaces: %s is left alone: %s", home, exc)
            continue
        if owner is not None and os.path.realpath(owner.state_dir) == ours:
            found.append((home, owner))
    return found
