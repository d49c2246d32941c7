"""Making a session's worktree: find the repository of ``cwd``, check the names, ``worktree add``.

Nothing here touches the source checkout's files, index or checked-out branch: ``worktree add
-b`` only creates a branch ref and a new directory. The caller holds the repository's lock.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import msgspec
import trio

from actors.workspace.git import Git
from actors.workspace.names import check_base, check_branch, default_branch, ref_part
from actors.workspace.records import Owner, WorkspaceRecord, write_owner
from actors.workspace.removal import branch_exists
from protocol.errors import BadRequest, GitFailed
from protocol.models import WorkspaceSpec

__all__ = ["Located", "locate", "make_worktree"]


class Located(msgspec.Struct, frozen=True, kw_only=True):
    """The repository that contains a directory: its top level, git common directory, and the
    directory's path relative to the top level (``""`` or ending in ``/``)."""

    top: str
    common_dir: str
    prefix: str


async def locate(git: Git, cwd: str) -> Located:
    """The repository work tree ``cwd`` is in; ``BadRequest`` (saying what git said) if none."""
    if not cwd or not os.path.isdir(cwd):
        raise BadRequest(f"cwd {cwd!r} is not a directory", data={"field": "cwd"})
    found = await git.run(cwd, "rev-parse", "--path-format=absolute", "--show-toplevel",
                          "--git-common-dir", "--show-prefix", check=False)
    lines = found.out.decode("utf-8", "surrogateescape").split("\n")
    if found.code != 0 or len(lines) < 3:
        raise BadRequest(f"workspace mode 'worktree' needs a cwd inside a git work tree, and "
                         f"{cwd!r} is not: git says {found.message()!r}", data={"field": "cwd"})
    return Located(top=lines[0], common_dir=os.path.realpath(lines[1]), prefix=lines[2])


async def make_worktree(git: Git, located: Located, spec: WorkspaceSpec, *, session_id: str,
                        label: str, root: Path, state_dir: Path) -> WorkspaceRecord:
    """Create the worktree of session ``session_id`` under ``root`` and return its record.

    ``BadRequest`` for a hostile or taken ``branch``, a ``base`` git cannot resolve, or a root
    inside the repository; on any failure nothing is left behind (the home directory, the
    branch and git's record of the worktree are removed again).
    """
    top = located.top
    branch = check_branch(spec.branch) if spec.branch is not None else None
    base_ref = check_base(spec.base) if spec.base is not None else "HEAD"
    home = root / session_id
    _check_outside(home, top)
    base = await _resolve(git, top, base_ref)
    if branch is None:
        branch = default_branch(label)
        if await branch_exists(git, top, branch):
            branch = f"{branch}-{ref_part(session_id)}"
    if await branch_exists(git, top, branch):
        raise BadRequest(f"git branch {branch!r} already exists in {top}",
                         data={"field": "workspace.branch"})
    path = home / (ref_part(os.path.basename(top)) or "repo")
    owner = Owner(state_dir=str(state_dir), session_id=session_id, repo=top,
                  common_dir=located.common_dir, path=str(path), branch=branch)
    await trio.to_thread.run_sync(_make_home, home, owner)
    try:
        await git.run(top, "worktree", "add", "--quiet", "--no-track", "-b", branch, "--",
                      str(path), base)
        cwd = path / located.prefix if located.prefix else path
        await trio.to_thread.run_sync(lambda: cwd.mkdir(parents=True, exist_ok=True))
        git_dir = await trio.to_thread.run_sync(_git_dir_of, path)
    except BaseException:
        with trio.CancelScope(shield=True):
            await _undo(git, top, path, branch, home)
        raise
    return WorkspaceRecord(session_id=session_id, repo=top, common_dir=located.common_dir,
                           home=str(home), path=str(path), cwd=str(cwd).rstrip("/"),
                           git_dir=git_dir, branch=branch, base=base, label=label)


async def _resolve(git: Git, top: str, base: str) -> str:
    found = await git.run(top, "rev-parse", "--verify", "--quiet", "--end-of-options",
                          f"{base}^{{commit}}", check=False)
    if found.code != 0 or not found.text:
        what = "the repository has no commit yet" if base == "HEAD" else "no such commit"
        raise BadRequest(f"git cannot resolve workspace.base {base!r} to a commit in {top} ({what})",
                         data={"field": "workspace.base"})
    return found.text


def _check_outside(home: Path, top: str) -> None:
    if home.resolve().is_relative_to(Path(top).resolve()):
        raise BadRequest(f"the workspaces root {home.parent} is inside the repository {top}: git "
                         "would see every worktree as untracked files there")


def _make_home(home: Path, owner: Owner) -> None:
    home.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    home.mkdir(mode=0o700)
    write_owner(home, owner)


def _git_dir_of(path: Path) -> str:
    """The worktree's own git directory, from its ``.git`` file (``gitdir: …``)."""
    text = (path / ".git").read_text(encoding="utf-8", errors="surrogateescape").strip()
    if not text.startswith("gitdir: "):
        raise GitFailed(f"git made {path} without a .git file naming its git directory")
    return os.path.realpath(os.path.join(path, text.removeprefix("gitdir: ")))


async def _undo(git: Git, top: str, path: Path, branch: str, home: Path) -> None:
    """Remove what a failed ``make_worktree`` may have made; best effort, never raises."""
    for args in (("worktree", "remove", "--force", "--force", str(path)), ("worktree", "prune"),
                 ("branch", "-D", branch)):
        try:
            await git.run(top, *args, check=False)
        except Exception:  # noqa: BLE001 - the original error is the one to report
            pass
    await trio.to_thread.run_sync(lambda: shutil.rmtree(home, ignore_errors=True))
