"""Discard and the boot reconcile with real git: what goes, and the branches that are kept."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from actors.workspace.records import Owner, write_owner
from protocol.errors import Unsupported

from .gitrig import commit_all, git, make_repo, new_session, workspaces

pytestmark = pytest.mark.timeout(120)


async def test_discard_removes_worktree_and_branch_unmerged_commits_included(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state")
    record = await new_session(spaces, "s-1", repo, name="doomed")
    (Path(record.path) / "work.txt").write_text("committed, never merged\n")
    commit_all(Path(record.path), "unmerged work")
    (Path(record.path) / "loose.txt").write_text("uncommitted\n")
    await spaces.discard("s-1")
    assert not Path(record.home).exists()
    assert git(repo, "branch", "--list", "corral/doomed") == ""
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    records = repo / ".git" / "worktrees"
    assert not records.exists() or not any(records.iterdir())
    after = spaces.record("s-1")
    assert after is not None and after.state == "discarded" and after.removed
    await spaces.discard("s-1")  # again: nothing to do
    with pytest.raises(Unsupported, match="discarded"):
        await spaces.diff("s-1")
    reloaded = workspaces(tmp_path / "state")
    reloaded.load()
    assert reloaded.record("s-1") == after


async def test_discard_of_a_worktree_deleted_by_hand_still_cleans_gits_record(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state")
    record = await new_session(spaces, "s-1", repo)
    shutil.rmtree(record.path)
    await spaces.discard("s-1")
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(repo, "branch", "--list", record.branch) == ""


async def test_boot_prunes_orphans_keeping_branches_with_unmerged_commits(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    spaces = workspaces(state)
    kept = await new_session(spaces, "s-alive", repo, name="alive")
    empty = await new_session(spaces, "s-empty", repo, name="empty")
    worked = await new_session(spaces, "s-worked", repo, name="worked")
    (Path(worked.path) / "precious.txt").write_text("the user's work\n")
    precious = commit_all(Path(worked.path), "precious work")
    shutil.rmtree(state / "sessions" / "s-empty")
    shutil.rmtree(state / "sessions" / "s-worked")
    # a home of another daemon sharing the root, and a stray directory, are left alone
    foreign = state / "worktrees" / "s-foreign"
    foreign.mkdir()
    write_owner(foreign, Owner(state_dir=str(tmp_path / "other-state"), session_id="s-foreign",
                               repo=str(repo), common_dir=str(repo / ".git"), path=str(foreign / "x"),
                               branch="corral/foreign"))
    (state / "worktrees" / "stray").mkdir()

    with caplog.at_level(logging.INFO, logger="corral.workspaces"):
        await workspaces(state).run()
    assert Path(kept.path).is_dir() and git(repo, "branch", "--list", "corral/alive") != ""
    for gone in (empty, worked):
        assert not Path(gone.home).exists()
        assert f"worktree {gone.path}" not in git(repo, "worktree", "list", "--porcelain")
    assert git(repo, "branch", "--list", "corral/empty") == ""
    assert git(repo, "rev-parse", "corral/worked") == precious
    assert foreign.is_dir() and (state / "worktrees" / "stray").is_dir()
    messages = [r.getMessage() for r in caplog.records]
    assert any(empty.path in m and "branch corral/empty deleted" in m for m in messages)
    assert any(worked.path in m and "branch corral/worked kept: 1 commit(s)" in m for m in messages)
    assert not any("s-alive" in m or "foreign" in m for m in messages)


async def test_an_orphan_whose_repository_is_gone_is_still_removed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    record = await new_session(workspaces(state), "s-1", repo)
    shutil.rmtree(state / "sessions" / "s-1")
    shutil.rmtree(repo)
    await workspaces(state).run()
    assert not Path(record.home).exists()
