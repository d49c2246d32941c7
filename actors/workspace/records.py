"""What the daemon remembers of a worktree, in two small files.

* ``sessions/<id>/workspace.json`` (``WorkspaceRecord``): the session's side — which
  repository, worktree, branch and base, and what became of it. It lives beside the session's
  ``meta.json`` and goes when the session directory goes.
* ``<workspaces root>/<key>/corral.json`` (``Owner``): the worktree's side — which state
  directory and session it belongs to. The boot reconcile reads it to find worktrees whose
  session is gone, and leaves alone the worktrees of another daemon sharing the same root.

Layout under the root: ``<key>/corral.json``, ``<key>/index`` (a scratch index for snapshots,
so the agent's own index is never touched) and ``<key>/<repository name>/``, the worktree.
Both files are written atomically (temporary file, fsync, rename); writes block, so async
callers run them in a worker thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import msgspec

from protocol.errors import StorageFailed
from protocol.models import WorkspaceInfo, WorkspaceState
from supervisor.atomic import atomic_write

__all__ = [
    "OWNER_NAME",
    "RECORD_NAME",
    "Owner",
    "WorkspaceRecord",
    "read_owner",
    "read_record",
    "write_owner",
    "write_record",
]

RECORD_NAME = "workspace.json"
OWNER_NAME = "corral.json"
_T = TypeVar("_T")


class WorkspaceRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A session's worktree.

    ``repo``: the top level of the checkout the session was created from (merges go into the
    branch it has checked out); ``common_dir``: that repository's git directory (the key of its
    lock); ``home``: ``<root>/<key>``; ``path``: the worktree's top level; ``cwd``: where the
    session runs (``path`` plus the subdirectory ``cwd`` was in); ``git_dir``: the worktree's
    own git directory (its index); ``base``: the commit diffs are taken against; ``label``: the
    session's name or id (corral's commit messages); ``removed``: the worktree is gone.
    """

    session_id: str
    repo: str
    common_dir: str
    home: str
    path: str
    cwd: str
    git_dir: str
    branch: str
    base: str
    label: str
    changed_files: int = 0
    state: WorkspaceState = "active"
    merged_commit: str | None = None
    removed: bool = False

    def info(self) -> WorkspaceInfo:
        """The record as ``SessionInfo.workspace`` shows it."""
        return WorkspaceInfo(branch=self.branch, path=self.path, base=self.base,
                             changed_files=self.changed_files, state=self.state)


class Owner(msgspec.Struct, frozen=True, kw_only=True):
    """Who a worktree under the root belongs to (``corral.json`` in its home)."""

    state_dir: str
    session_id: str
    repo: str
    common_dir: str
    path: str
    branch: str


def write_record(session_dir: Path, record: WorkspaceRecord) -> None:
    """Atomically replace ``session_dir/workspace.json``; ``StorageFailed`` if it cannot."""
    _write(session_dir / RECORD_NAME, record)


def read_record(session_dir: Path) -> WorkspaceRecord | None:
    """``session_dir/workspace.json``, or None if the session has no worktree.

    ``StorageFailed`` if it exists but cannot be read or decoded.
    """
    return _read(session_dir / RECORD_NAME, WorkspaceRecord)


def write_owner(home: Path, owner: Owner) -> None:
    """Atomically replace ``home/corral.json``; ``StorageFailed`` if it cannot."""
    _write(home / OWNER_NAME, owner)


def read_owner(home: Path) -> Owner | None:
    """``home/corral.json``, or None if there is none; ``StorageFailed`` if it is unreadable."""
    return _read(home / OWNER_NAME, Owner)


def _write(path: Path, value: msgspec.Struct) -> None:
    try:
        atomic_write(path, msgspec.json.format(msgspec.json.encode(value), indent=2) + b"\n")
    except OSError as exc:
        raise StorageFailed(f"cannot write {path}: {exc.strerror or exc}",
                            data={"path": str(path)}) from exc


def _read(path: Path, kind: type[_T]) -> _T | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageFailed(f"cannot read {path}: {exc.strerror or exc}", data={"path": str(path)}) from exc
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.DecodeError as exc:
        raise StorageFailed(f"{path} is corrupt: {exc}", data={"path": str(path)}) from exc
