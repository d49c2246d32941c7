"""Taking a worktree away: its directory, git's record of it, its home, and (maybe) its branch.

``remove_worktree`` first gives a branch a sandbox had redirected its plain ref back
(``actors.sandboxing.reflink.unlink``): no sandbox of the worktree runs any more.

Commands run in the repository's git common directory, which works for ``worktree``,
``branch`` and ``rev-list`` even when the source checkout has moved. A repository that is gone
altogether leaves only directories to delete. The caller holds the repository's lock.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import trio

from actors.sandboxing.reflink import unlink
from actors.workspace.git import Git
from protocol.errors import StorageFailed

__all__ = ["branch_exists", "delete_branch", "remove_worktree", "unlink_branch", "unmerged_commits"]

log = logging.getLogger("corral.workspaces")


async def remove_worktree(git: Git, common_dir: str, path: str, home: str, branch: str) -> None:
    """Remove the worktree at ``path`` (local changes included), git's record of it and its
    ``home`` (``corral.json``, the scratch index); ``branch`` becomes a plain ref again. Raises
    ``GitFailed`` if git cannot prune and ``StorageFailed`` if the home cannot be deleted."""
    known = os.path.isdir(common_dir)
    if known:
        await unlink_branch(common_dir, branch)
    removed = False
    if known and os.path.lexists(path):
        # Not checked: a directory git no longer knows as a worktree goes with the home below.
        found = await git.run(common_dir, "worktree", "remove", "--force", "--force", path, check=False)
        removed = found.code == 0
    await trio.to_thread.run_sync(_remove_tree, Path(home))
    if known and not removed:
        # git's record of a directory that vanished (``prune`` drops every such stale record;
        # git would do the same at its next gc).
        await git.run(common_dir, "worktree", "prune")


async def unlink_branch(common_dir: str, branch: str) -> None:
    """``branch`` as a plain ref again if a sandbox redirected it (``reflink``); a failure is
    logged (the symlinked ref still reads right: git follows it)."""
    try:
        await trio.to_thread.run_sync(unlink, Path(common_dir), f"refs/heads/{branch}")
    except (OSError, ValueError) as exc:
        log.warning("workspaces: cannot make the branch %s of %s a plain ref again: %s", branch, common_dir, exc)


async def delete_branch(git: Git, common_dir: str, branch: str) -> bool:
    """Delete ``branch`` whatever it holds; False if there was no such branch (or repository)."""
    if not os.path.isdir(common_dir):
        return False
    found = await git.run(common_dir, "branch", "-D", "--", branch, check=False)
    return found.code == 0


async def branch_exists(git: Git, cwd: str, branch: str) -> bool:
    """Whether the repository of ``cwd`` has a local branch ``branch``."""
    found = await git.run(cwd, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
    return found.code == 0


async def unmerged_commits(git: Git, common_dir: str, branch: str) -> int:
    """How many commits of ``branch`` no other local branch holds (0: deleting it loses nothing)."""
    found = await git.run(common_dir, "rev-list", "--count", f"refs/heads/{branch}", "--not",
                          f"--exclude={branch}", "--branches")
    return int(found.text or "0")


def _remove_tree(home: Path) -> None:
    try:
        shutil.rmtree(home)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StorageFailed(f"cannot remove {home}: {exc.strerror or exc}", data={"path": str(home)}) from exc
