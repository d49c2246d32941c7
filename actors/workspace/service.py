"""``Workspaces``: every session worktree of the daemon, and the API the session table and the
request handlers call.

* ``place`` (at ``session.create``, before the session exists): check the request, create the
  worktree, return its record (``cwd`` to run the harness in, ``repo``, ``branch``); ``bind``
  once the session directory exists writes ``sessions/<id>/workspace.json``; ``release`` undoes
  a ``place`` whose session could not be created.
* ``diff``, ``commit``, ``merge``, ``discard``: the ``workspace.*`` requests.
* ``after_result``: after a turn's ``result``, the changed-files count, and a ``workspace``
  event when it moved.
* ``describe``: ``SessionInfo`` with ``repo`` and ``workspace`` filled in.

A bubblewrap sandbox gives the session's branch a directory of its own, the ref a symlink to it
(``actors.sandboxing.reflink``): ``commit`` and ``merge`` make it plain while they move the
branch and link it again after, and removing the worktree makes it plain for good.
* ``run``: the boot reconcile (``actors.workspace.reconcile``) as a child of the root.

The requests that involve a session too (``session.create`` with a worktree, ``workspace.merge``
and ``workspace.discard``) are ``actors.workspace.requests.WorktreeRequests``, built on these.

Every git operation on one repository holds that repository's lock (a ``trio.Lock`` per git
common directory): git's own locks make a second writer fail rather than wait, and two
``worktree add`` at once can race on ``.git/worktrees``. Records are written in a worker
thread (two fsyncs).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec
import trio

from actors.sandboxing import reflink
from actors.workspace import merging
from actors.workspace.changes import file_changes, snapshot, unified_diff
from actors.workspace.config import WorkspacesConfig, workspaces_root
from actors.workspace.git import Git
from actors.workspace.placement import locate, make_worktree
from actors.workspace.reconcile import reconcile
from actors.workspace.records import RECORD_NAME, WorkspaceRecord, read_record, write_record
from actors.workspace.removal import delete_branch, remove_worktree
from protocol import events as ev
from protocol.errors import BadRequest, StorageFailed, Unsupported
from protocol.messages import CommitResult, DiffResult, MergeStrategy
from protocol.models import SessionInfo, WorkspaceSpec
from supervisor.ledger.store import Ledger

__all__ = ["Workspaces"]

log = logging.getLogger("corral.workspaces")


class Workspaces:
    """The daemon's session worktrees (see the module docstring)."""

    def __init__(self, state_dir: Path, config: WorkspacesConfig, ledger: Ledger | None) -> None:
        self.state_dir = state_dir
        self.sessions_dir = state_dir / "sessions"
        self.root = workspaces_root(config, state_dir)
        self.config = config
        self.git = Git(ledger=ledger, binary=config.git, timeout=config.timeout)
        self._records: dict[str, WorkspaceRecord] = {}
        self._locks: dict[str, trio.Lock] = {}

    # --- boot -------------------------------------------------------------------------------

    def load(self) -> None:
        """Read every ``sessions/<id>/workspace.json`` (blocking; at boot, before serving)."""
        for path in sorted(self.sessions_dir.glob(f"*/{RECORD_NAME}")):
            try:
                record = read_record(path.parent)
            except StorageFailed as exc:
                log.warning("session %s: its worktree record is unreadable: %s", path.parent.name, exc)
                continue
            if record is not None:
                self._records[record.session_id] = record

    async def run(self, *, task_status: trio.TaskStatus[Workspaces] = trio.TASK_STATUS_IGNORED) -> None:
        """The boot reconcile as a root child: ready once orphaned worktrees are pruned (a
        failure is logged; the daemon serves all the same). Returns then."""
        try:
            await reconcile(self.git, self.root, self.state_dir)
        except Exception:
            log.exception("workspaces: the boot reconcile failed")
        task_status.started(self)

    # --- session.create ------------------------------------------------------------------

    async def place(self, session_id: str, spec: WorkspaceSpec, *, cwd: str,
                    label: str | None = None) -> WorkspaceRecord | None:
        """Create the worktree of a new session; None for ``mode: none``.

        ``label`` (the session's name, else its id) makes the default branch. The session runs
        in ``record.cwd``. ``BadRequest`` for what cannot be a worktree (see ``make_worktree``).
        """
        if spec.mode == "none":
            if spec.base is not None or spec.branch is not None:
                raise BadRequest("workspace.base and workspace.branch need workspace.mode 'worktree'")
            return None
        located = await locate(self.git, cwd)
        async with self._lock(located.common_dir):
            return await make_worktree(self.git, located, spec, session_id=session_id,
                                       label=label or session_id, root=self.root,
                                       state_dir=self.state_dir)

    async def bind(self, record: WorkspaceRecord) -> None:
        """Keep ``record`` with its session (``sessions/<id>/workspace.json``, which must exist)."""
        await self._save(record)

    async def release(self, record: WorkspaceRecord) -> None:
        """Undo ``place`` for a session that was not created: worktree, branch and home go."""
        self._records.pop(record.session_id, None)
        async with self._lock(record.common_dir):
            await remove_worktree(self.git, record.common_dir, record.path, record.home, record.branch)
            await delete_branch(self.git, record.common_dir, record.branch)

    # --- reading ----------------------------------------------------------------------------

    def record(self, session_id: str) -> WorkspaceRecord | None:
        """The session's worktree record, if it was created with one."""
        return self._records.get(session_id)

    def owned(self, session_id: str) -> WorkspaceRecord:
        """The session's worktree record; ``unsupported`` if it was created without one."""
        record = self._records.get(session_id)
        if record is None:
            raise Unsupported(f"session {session_id} has no worktree (it was created without "
                              "workspace mode 'worktree')")
        return record

    def describe(self, info: SessionInfo) -> SessionInfo:
        """``info`` with ``repo`` and ``workspace`` set when the session has a worktree."""
        record = self._records.get(info.id)
        if record is None:
            return info
        return msgspec.structs.replace(info, repo=record.repo, workspace=record.info())

    def event(self, session_id: str, state: ev.WorkspaceChange) -> ev.Workspace:
        """The ``workspace`` event that announces ``state`` for the session's worktree."""
        record = self._active(session_id, allow_removed=True)
        return ev.Workspace(state=state, branch=record.branch, path=record.path,
                            changed_files=record.changed_files)

    # --- workspace.* --------------------------------------------------------------------

    async def diff(self, session_id: str, *, stat: bool = False) -> DiffResult:
        """``workspace.diff``: the worktree against its base (see ``actors.workspace.changes``)."""
        async with self._lock(self._active(session_id).common_dir):
            record = self._active(session_id)
            tree = await snapshot(self.git, record)
            files = await file_changes(self.git, record, tree)
            text, truncated = ("", False) if stat else await unified_diff(
                self.git, record, tree, self.config.diff_limit)
            await self._count(record, len(files))
        return DiffResult(diff=text, files=files, truncated=truncated)

    async def commit(self, session_id: str, message: str) -> CommitResult:
        """``workspace.commit``: everything uncommitted, untracked files included."""
        if not message.strip():
            raise BadRequest("workspace.commit needs a message; git refuses an empty one")
        async with self._lock(self._active(session_id).common_dir), self._detached(self._active(session_id)):
            commit = await merging.commit_snapshot(self.git, self._active(session_id), message)
        if commit is None:
            raise BadRequest(f"nothing to commit: the worktree of {session_id} has no uncommitted changes")
        return CommitResult(commit=commit)

    async def merge(self, session_id: str, strategy: MergeStrategy, *, ended: bool) -> CommitResult:
        """``workspace.merge``; an ``ended`` session's worktree and branch go once merged."""
        async with self._lock(self._active(session_id).common_dir):
            record = self._active(session_id)
            async with self._detached(record):
                merged = await merging.merge(self.git, record, strategy)
            record = msgspec.structs.replace(record, state="merged", merged_commit=merged.commit,
                                             base=merged.base)
            await self._save(record)
            if ended:
                await self._save(await self._remove(record))
        return CommitResult(commit=merged.commit)

    async def discard(self, session_id: str) -> None:
        """``workspace.discard``: worktree and branch go, unmerged commits too. The caller has
        made sure the session is not running. Discarding twice is a no-op."""
        async with self._lock(self.owned(session_id).common_dir):
            record = self.owned(session_id)
            if record.removed and record.state == "discarded":
                return
            await self._save(await self._remove(msgspec.structs.replace(record, state="discarded")))

    async def after_result(self, session_id: str) -> ev.Workspace | None:
        """After a turn's ``result``: count the changed files; the ``changed`` event if the
        count moved (None otherwise, or for a session without an active worktree)."""
        record = self._records.get(session_id)
        if record is None or record.removed:
            return None
        async with self._lock(record.common_dir):
            record = self._records[session_id]
            if record.removed:
                return None
            files = await file_changes(self.git, record, await snapshot(self.git, record))
            if not await self._count(record, len(files)):
                return None
        return self.event(session_id, "changed")

    # --- internals ------------------------------------------------------------------------

    def _active(self, session_id: str, *, allow_removed: bool = False) -> WorkspaceRecord:
        record = self.owned(session_id)
        if record.removed and not allow_removed:
            raise Unsupported(f"the worktree of session {session_id} was {record.state}; "
                              "there is no worktree left")
        return record

    async def _count(self, record: WorkspaceRecord, count: int) -> bool:
        """Record a new changed-files count; whether it differs from the last one."""
        current = self._records.get(record.session_id, record)
        if current.changed_files == count:
            return False
        await self._save(msgspec.structs.replace(current, changed_files=count))
        return True

    async def _remove(self, record: WorkspaceRecord) -> WorkspaceRecord:
        await remove_worktree(self.git, record.common_dir, record.path, record.home, record.branch)
        await delete_branch(self.git, record.common_dir, record.branch)
        return msgspec.structs.replace(record, removed=True, changed_files=0)

    @asynccontextmanager
    async def _detached(self, record: WorkspaceRecord) -> AsyncIterator[None]:
        """corral moves the session's branch in here: if a sandbox had linked it
        (``actors.sandboxing.reflink``), its ref and reflog are plain files while git writes
        them, and linked again after, so the sandbox sees the new value. A failure to link
        again is logged: the next spawn links."""
        common, ref = Path(record.common_dir), f"refs/heads/{record.branch}"
        await trio.to_thread.run_sync(reflink.detach, common, ref)
        try:
            yield
        finally:
            with trio.CancelScope(shield=True):
                try:
                    await trio.to_thread.run_sync(reflink.relink, common, ref)
                except OSError as exc:
                    log.warning("workspace of session %s: cannot relink its branch %s: %s",
                                record.session_id, record.branch, exc)

    async def _save(self, record: WorkspaceRecord) -> None:
        directory = self.sessions_dir / record.session_id
        await trio.to_thread.run_sync(write_record, directory, record)
        self._records[record.session_id] = record

    @asynccontextmanager
    async def _lock(self, common_dir: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(common_dir, trio.Lock())
        async with lock:
            yield
