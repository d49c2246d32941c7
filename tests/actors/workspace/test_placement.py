"""Creating worktrees with real git: where they go, what they leave alone, what they refuse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from actors.workspace.records import read_owner, read_record
from protocol.errors import BadRequest
from protocol.models import WorkspaceSpec

from .gitrig import commit_all, fingerprint, git, make_repo, new_session, workspaces

pytestmark = pytest.mark.timeout(120)


async def test_a_worktree_on_a_new_branch_from_head_under_the_state_directory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state")
    record = await new_session(spaces, "s-1", repo, name="fix tests")
    assert record.branch == "corral/fix-tests"
    assert Path(record.path).parent == tmp_path / "state" / "worktrees" / "s-1"
    assert record.cwd == record.path and record.repo == str(repo)
    assert record.base == git(repo, "rev-parse", "HEAD")
    assert git(record.path, "rev-parse", "--abbrev-ref", "HEAD") == "corral/fix-tests"
    assert (Path(record.path) / "src" / "app.py").read_text() == "print('hi')\n"
    assert read_record(tmp_path / "state" / "sessions" / "s-1") == record
    owner = read_owner(Path(record.home))
    assert owner is not None and owner.session_id == "s-1" and owner.branch == record.branch
    assert str(tmp_path / "state" / "worktrees" / "s-1") in git(repo, "worktree", "list")


async def test_a_cwd_in_a_subdirectory_runs_in_the_same_subdirectory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "untracked" / "deep").mkdir(parents=True)
    spaces = workspaces(tmp_path / "state")
    in_src = await new_session(spaces, "s-1", repo / "src")
    assert in_src.cwd == os.path.join(in_src.path, "src") and in_src.repo == str(repo)
    in_new = await new_session(spaces, "s-2", repo / "untracked" / "deep")
    assert in_new.cwd == os.path.join(in_new.path, "untracked", "deep") and Path(in_new.cwd).is_dir()


async def test_uncommitted_changes_in_the_source_checkout_are_untouched(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "README.md").write_text("edited, not committed\n")
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")
    (repo / "loose.txt").write_text("untracked\n")
    checkout = [repo / "README.md", repo / "staged.txt", repo / "loose.txt", repo / "src",
                repo / ".git" / "index", repo / ".git" / "HEAD"]
    before = fingerprint(*checkout)
    status = git(repo, "status", "--porcelain")
    record = await new_session(workspaces(tmp_path / "state"), "s-1", repo)
    assert fingerprint(*checkout) == before
    assert git(repo, "status", "--porcelain") == status
    assert (Path(record.path) / "README.md").read_text() == "hello\n"
    assert not (Path(record.path) / "staged.txt").exists()
    assert not (Path(record.path) / "loose.txt").exists()


async def test_base_and_branch_are_used_as_given(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "later.txt").write_text("later\n")
    commit_all(repo, "later")
    spaces = workspaces(tmp_path / "state")
    record = await new_session(spaces, "s-1", repo, base="HEAD~1", branch="try/old-base")
    assert record.base == first and record.branch == "try/old-base"
    assert not (Path(record.path) / "later.txt").exists()


async def test_a_taken_default_branch_gets_the_session_id_and_a_taken_branch_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state")
    assert (await new_session(spaces, "s-1", repo, name="same")).branch == "corral/same"
    assert (await new_session(spaces, "s-2", repo, name="same")).branch == "corral/same-s-2"
    with pytest.raises(BadRequest, match="git branch 'corral/same' already exists"):
        await new_session(spaces, "s-3", repo, branch="corral/same")
    assert not (tmp_path / "state" / "worktrees" / "s-3").exists()


async def test_outside_a_repository_is_a_bad_request_that_mentions_git(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    spaces = workspaces(tmp_path / "state")
    with pytest.raises(BadRequest, match="git") as caught:
        await spaces.place("s-1", WorkspaceSpec(mode="worktree"), cwd=str(plain))
    assert "not a git repository" in caught.value.message
    with pytest.raises(BadRequest, match="not a directory"):
        await spaces.place("s-1", WorkspaceSpec(mode="worktree"), cwd=str(plain / "missing"))


@pytest.mark.parametrize(("field", "value"), [
    ("branch", "../x"), ("branch", "-f"), ("branch", "a..b"), ("branch", "x" * 300),
    ("branch", "a\0b"), ("branch", "a\nb"), ("base", "-f"), ("base", "a..b"), ("base", "x" * 300),
    ("base", "a\nb"), ("base", "--output=/tmp/x"), ("base", "no-such-ref"),
])
async def test_hostile_names_are_refused_and_leave_nothing_behind(tmp_path: Path, field: str, value: str) -> None:
    repo = make_repo(tmp_path / "repo")
    refs = git(repo, "for-each-ref")
    spaces = workspaces(tmp_path / "state")
    spec = WorkspaceSpec(mode="worktree", **{field: value})
    with pytest.raises(BadRequest, match="git") as caught:
        await spaces.place("s-1", spec, cwd=str(repo))
    assert caught.value.data == {"field": f"workspace.{field}"}
    assert git(repo, "for-each-ref") == refs
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert not (tmp_path / "state" / "worktrees" / "s-1").exists()


async def test_mode_none_is_todays_behaviour_and_takes_no_base_or_branch(tmp_path: Path) -> None:
    spaces = workspaces(tmp_path / "state")
    assert await spaces.place("s-1", WorkspaceSpec(), cwd=str(tmp_path)) is None
    with pytest.raises(BadRequest, match="worktree"):
        await spaces.place("s-1", WorkspaceSpec(branch="x"), cwd=str(tmp_path))


async def test_a_root_inside_the_repository_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state", root=str(repo / "trees"))
    with pytest.raises(BadRequest, match="inside the repository"):
        await spaces.place("s-1", WorkspaceSpec(mode="worktree"), cwd=str(repo))


async def test_the_repositorys_hooks_do_not_run_for_corrals_commands(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path / 'hook-ran'}\n")
    hook.chmod(0o755)
    git(repo, "checkout", "-q", "-b", "probe")  # the hook works for the user's own commands
    assert (tmp_path / "hook-ran").exists()
    (tmp_path / "hook-ran").unlink()
    await new_session(workspaces(tmp_path / "state"), "s-1", repo)
    assert not (tmp_path / "hook-ran").exists()


async def test_ten_concurrent_creates_on_one_repository_all_succeed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state")
    records = {}

    async def create(n: int) -> None:
        records[n] = await new_session(spaces, f"s-{n}", repo, name=f"agent {n}")

    with trio.fail_after(100):
        async with trio.open_nursery() as nursery:
            for n in range(10):
                nursery.start_soon(create, n)
    assert sorted(r.branch for r in records.values()) == sorted(f"corral/agent-{n}" for n in range(10))
    listed = git(repo, "worktree", "list", "--porcelain")
    assert all(f"worktree {r.path}" in listed for r in records.values())
    assert all(git(r.path, "status", "--porcelain") == "" for r in records.values())
