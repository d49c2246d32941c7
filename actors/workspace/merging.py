"""Merging a worktree's branch into the branch its repository has checked out.

Theory of operation
-------------------
A merge is planned entirely in git's object store and applied in one step, so that a refusal
leaves the repository exactly as it was (working tree, index and every ref; only unreferenced
objects are added, which git's gc collects):

1. **Target.** The source checkout's ``HEAD`` must be a branch with a commit, and its tracked
   files must be unmodified (``target_dirty`` otherwise; untracked files are fine).
2. **Tip.** The worktree's ``HEAD``, plus, when the worktree holds uncommitted or untracked
   changes, a commit of its snapshot on top (``corral: <label>``) — made as an object only;
   the worktree's branch is moved to it only once the merge has been applied.
3. **Plan** (``git merge-tree --write-tree``, which merges trees without a working tree):
   ``merge`` commits the merged tree with two parents (always a merge commit); ``squash``
   commits it with the target as the only parent; ``rebase`` replays each of the tip's
   non-merge commits on top of the target, keeping author, date and message, each one's tree
   being the target merged with the branch as of that commit (git 2.39 has no
   ``merge-tree --merge-base``, so the replay is of snapshots, not of single patches; the
   result is the same whenever the branch applies without conflicts). Any conflict refuses the
   whole merge with ``merge_conflict`` and the conflicting paths.
4. **Apply.** Untracked files of the target that the result would overwrite refuse it
   (``target_dirty``). Then ``git merge --ff-only`` moves the target branch, its index and files
   to the planned commit in one command that checks before it writes.
5. **Afterwards** the worktree's branch is moved to the tip commit (``rebase``: to the rebased
   commits, with ``reset --keep``); a failure there is logged, not raised: the merge is done.

Nothing to merge (the tip is already in the target) answers the target's commit unchanged.
The caller holds the repository's lock.
"""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec
import trio

from actors.workspace.changes import snapshot
from actors.workspace.git import Git, identity_env
from actors.workspace.records import WorkspaceRecord
from protocol.errors import BadRequest, GitFailed, MergeConflict, TargetDirty
from protocol.messages import MergeStrategy

__all__ = ["Merged", "merge"]

log = logging.getLogger("corral.workspaces")


class Merged(msgspec.Struct, frozen=True, kw_only=True):
    """A merge that was applied: the target's new ``commit``, and the ``base`` the worktree's
    diff is now taken against (moved only by ``rebase``)."""

    commit: str
    base: str


async def merge(git: Git, record: WorkspaceRecord, strategy: MergeStrategy) -> Merged:
    """Merge the worktree of ``record`` into its repository's checked-out branch (see above)."""
    repo, common = record.repo, record.common_dir
    target_ref, target = await _target(git, repo)
    dirty = await _dirty(git, repo)
    if dirty:
        raise TargetDirty(f"{repo} has uncommitted changes to tracked files ({_some(dirty)}); "
                          "git would mix them into the merge: commit or stash them first",
                          data={"files": dirty})
    identity = await identity_env(git, repo)
    head = await _rev(git, record.path, "HEAD")
    tip = await _tip(git, record, head, identity)
    if await _is_ancestor(git, common, tip, target):
        return Merged(commit=target, base=record.base)
    branch = target_ref.removeprefix("refs/heads/")
    planned = await _plan(git, record, strategy, target, tip, branch, identity)
    if planned == target:
        return Merged(commit=target, base=record.base)
    blocking = await _overwritten(git, repo, target, planned)
    if blocking:
        raise TargetDirty(f"untracked files in {repo} would be overwritten by the merge "
                          f"({_some(blocking)}): move them away first", data={"files": blocking})
    await git.run(repo, "merge", "--ff-only", "--quiet", "--no-autostash", planned)
    await _follow(git, record, head, tip, planned if strategy == "rebase" else None)
    return Merged(commit=planned, base=target if strategy == "rebase" else record.base)


async def commit_snapshot(git: Git, record: WorkspaceRecord, message: str) -> str | None:
    """Commit everything uncommitted in the worktree onto its ``HEAD``; the new commit, or
    None when there is nothing to commit. The agent's index is reset to the new ``HEAD``
    (its files are left as they are)."""
    identity = await identity_env(git, record.repo)
    head = await _rev(git, record.path, "HEAD")
    tree = await snapshot(git, record)
    if tree == await _rev(git, record.path, f"{head}^{{tree}}"):
        return None
    commit = await _commit_tree(git, record, tree, [head], message, identity)
    await git.run(record.path, "update-ref", "-m", "corral: commit", "HEAD", commit, head)
    await git.run(record.path, "reset", "--quiet")
    return commit


async def _target(git: Git, repo: str) -> tuple[str, str]:
    ref = await git.run(repo, "symbolic-ref", "--quiet", "HEAD", check=False)
    if ref.code != 0:
        raise BadRequest(f"git has no branch to merge into: {repo} has a detached HEAD")
    head = await git.run(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
    if head.code != 0:
        raise BadRequest(f"git has nothing to merge into: {ref.text} in {repo} has no commit yet")
    return ref.text, head.text


async def _dirty(git: Git, repo: str) -> list[str]:
    found = await git.run(repo, "status", "--porcelain=v1", "-z", "--untracked-files=no",
                          "--ignore-submodules=none")
    entries = found.out.split(b"\0")
    paths: list[str] = []
    i = 0
    while i < len(entries):
        entry = entries[i]
        if len(entry) > 3:
            paths.append(entry[3:].decode("utf-8", "replace"))
            if entry[:1] in (b"R", b"C"):
                i += 1  # the rename's source path follows
        i += 1
    return paths


async def _tip(git: Git, record: WorkspaceRecord, head: str, identity: dict[str, str]) -> str:
    tree = await snapshot(git, record)
    if tree == await _rev(git, record.path, f"{head}^{{tree}}"):
        return head
    return await _commit_tree(git, record, tree, [head], f"corral: {record.label}", identity)


async def _plan(git: Git, record: WorkspaceRecord, strategy: MergeStrategy, target: str,
                tip: str, target_branch: str, identity: dict[str, str]) -> str:
    common = record.common_dir
    if strategy == "rebase":
        return await _replay(git, record, target, tip, target_branch, identity)
    tree = await _merge_tree(git, common, target, tip, record.branch, target_branch)
    if strategy == "merge":
        message = f"corral: merge {record.branch} ({record.label})"
        return await _commit_tree(git, record, tree, [target, tip], message, identity)
    if tree == await _rev(git, common, f"{target}^{{tree}}"):
        return target
    subjects = await git.run(common, "rev-list", "--no-merges", "--format=%s", "--no-commit-header",
                             f"{target}..{tip}")
    body = "\n".join(f"* {line}" for line in subjects.text.splitlines())
    message = f"corral: {record.label}\n\nSquashed from {record.branch}:\n{body}\n"
    return await _commit_tree(git, record, tree, [target], message, identity)


async def _replay(git: Git, record: WorkspaceRecord, target: str, tip: str, target_branch: str,
                  identity: dict[str, str]) -> str:
    common = record.common_dir
    listed = await git.run(common, "rev-list", "--reverse", "--no-merges", f"{target}..{tip}")
    current, current_tree = target, await _rev(git, common, f"{target}^{{tree}}")
    for commit in listed.text.split():
        tree = await _merge_tree(git, common, target, commit, record.branch, target_branch)
        if tree == current_tree:
            continue  # nothing left of it once replayed, as ``git rebase`` drops it
        author, message = _author_and_message((await git.run(common, "cat-file", "commit", commit)).out)
        current = await _commit_tree(git, record, tree, [current], message, {**identity, **author})
        current_tree = tree
    return current


async def _merge_tree(git: Git, common: str, ours: str, theirs: str, branch: str, target_branch: str) -> str:
    found = await git.run(common, "merge-tree", "--write-tree", "--name-only", "--no-messages",
                          "-z", ours, theirs, check=False)
    tokens = [t.decode("utf-8", "replace") for t in found.out.split(b"\0") if t]
    if found.code == 1 and tokens:
        files = sorted(set(tokens[1:]))
        raise MergeConflict(f"git cannot merge {branch} into {target_branch} without conflicts in "
                            f"{_some(files)}; nothing was changed", data={"files": files})
    if found.code != 0 or not tokens:
        raise GitFailed(f"git merge-tree failed: {found.message()}")
    return tokens[0]


async def _overwritten(git: Git, repo: str, target: str, planned: str) -> list[str]:
    changed = await git.run(repo, "diff-tree", "-r", "-z", "--name-only", "--no-renames", target, planned)
    untracked = await git.run(repo, "ls-files", "-z", "--others", "--exclude-standard")
    loose = {p.decode("utf-8", "replace") for p in untracked.out.split(b"\0") if p}
    hit: set[str] = set()
    for raw in changed.out.split(b"\0"):
        path = raw.decode("utf-8", "replace")
        parts = path.split("/")
        hit.update(p for p in ("/".join(parts[:n]) for n in range(1, len(parts) + 1)) if p in loose)
    return sorted(hit)


async def _follow(git: Git, record: WorkspaceRecord, head: str, tip: str, rebased: str | None) -> None:
    """Move the worktree's branch to what was merged; log (not raise) when the agent moved it."""
    try:
        if tip != head:
            await git.run(record.path, "update-ref", "-m", "corral: commit before merge", "HEAD", tip, head)
            await git.run(record.path, "reset", "--quiet")
        if rebased is not None:
            await git.run(record.path, "reset", "--quiet", "--keep", rebased)
    except GitFailed as exc:
        log.warning("workspace of session %s: merged, but its branch was left as it was: %s",
                    record.session_id, exc.message)


async def _commit_tree(git: Git, record: WorkspaceRecord, tree: str, parents: list[str], message: str,
                       env: dict[str, str]) -> str:
    path = Path(record.home) / "message"
    await trio.to_thread.run_sync(path.write_text, message if message.endswith("\n") else message + "\n")
    args = ["commit-tree", tree, *(arg for parent in parents for arg in ("-p", parent)), "-F", str(path)]
    return (await git.run(record.common_dir, *args, env=env)).text


async def _rev(git: Git, cwd: str, rev: str) -> str:
    return (await git.run(cwd, "rev-parse", "--verify", "--quiet", "--end-of-options", rev)).text


async def _is_ancestor(git: Git, common: str, commit: str, of: str) -> bool:
    found = await git.run(common, "merge-base", "--is-ancestor", commit, of, check=False)
    return found.code == 0


def _author_and_message(raw: bytes) -> tuple[dict[str, str], str]:
    """The author (as ``GIT_AUTHOR_*``) and the message of a raw commit object."""
    header, _, message = raw.partition(b"\n\n")
    author: dict[str, str] = {}
    for line in header.split(b"\n"):
        if line.startswith(b"author "):
            who, _, when = line[len(b"author "):].decode("utf-8", "replace").rpartition("> ")
            name, _, email = who.partition(" <")
            author = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": when}
    return author, message.decode("utf-8", "replace")


def _some(paths: list[str], shown: int = 5) -> str:
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more
