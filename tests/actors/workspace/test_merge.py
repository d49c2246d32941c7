"""Merging worktrees with real git: strategies, conflicts and dirty targets that change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.workspace import Workspaces
from protocol.errors import BadRequest, MergeConflict, TargetDirty

from .gitrig import IDENTITY, commit_all, fingerprint, git, make_repo, new_session, workspaces

pytestmark = pytest.mark.timeout(120)


async def _two_sessions(tmp_path: Path) -> tuple[Path, Workspaces, Path, Path]:
    """Two worktrees of one repository; each writes a file of its own and the same file."""
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state")
    one = Path((await new_session(spaces, "s-1", repo, name="one")).path)
    two = Path((await new_session(spaces, "s-2", repo, name="two")).path)
    for work, who in ((one, "one"), (two, "two")):
        (work / f"{who}.txt").write_text(f"from {who}\n")
        (work / "README.md").write_text(f"hello from {who}\n")
    return repo, spaces, one, two


def _everything(repo: Path, *worktrees: Path) -> str:
    return fingerprint(repo, *worktrees) + git(repo, "for-each-ref") + git(repo, "worktree", "list")


async def test_merge_of_the_first_succeeds_and_the_second_conflicts_changing_nothing(tmp_path: Path) -> None:
    repo, spaces, one, two = await _two_sessions(tmp_path)
    main_before = git(repo, "rev-parse", "main")
    merged = await spaces.merge("s-1", "merge", ended=False)
    assert git(repo, "rev-parse", "main") == merged.commit
    parents = git(repo, "rev-list", "--parents", "-n", "1", merged.commit).split()[1:]
    assert parents[0] == main_before and len(parents) == 2  # always a merge commit
    # one's uncommitted work was committed first, on its branch, as `corral: <name>`
    assert git(one, "log", "-1", "--format=%s") == "corral: one"
    assert git(one, "rev-parse", "HEAD") == parents[1] and git(one, "status", "--porcelain") == ""
    assert (repo / "one.txt").read_text() == "from one\n" and git(repo, "status", "--porcelain") == ""
    record = spaces.record("s-1")
    assert record is not None and record.state == "merged" and not record.removed

    before = _everything(repo, one, two)
    with pytest.raises(MergeConflict) as caught:
        await spaces.merge("s-2", "merge", ended=False)
    assert caught.value.data == {"files": ["README.md"]} and "README.md" in caught.value.message
    assert _everything(repo, one, two) == before
    for strategy in ("squash", "rebase"):
        with pytest.raises(MergeConflict):
            await spaces.merge("s-2", strategy, ended=False)  # type: ignore[arg-type]
        assert _everything(repo, one, two) == before
    assert (two / "two.txt").read_text() == "from two\n"  # two's uncommitted work is intact
    second = spaces.record("s-2")
    assert second is not None and second.state == "active"


async def test_squash_makes_one_commit_on_top_of_the_target(tmp_path: Path) -> None:
    repo, spaces, one, _ = await _two_sessions(tmp_path)
    commit_all(one, "first")
    (one / "more.txt").write_text("more\n")
    commit_all(one, "second")
    (one / "last.txt").write_text("uncommitted\n")
    main_before = git(repo, "rev-parse", "main")
    merged = await spaces.merge("s-1", "squash", ended=False)
    assert git(repo, "rev-list", "--parents", "-n", "1", merged.commit).split()[1:] == [main_before]
    message = git(repo, "log", "-1", "--format=%B", merged.commit)
    assert message.startswith("corral: one\n\nSquashed from corral/one:")
    assert "* first" in message and "* second" in message and "* corral: one" in message
    assert sorted(git(repo, "ls-files").split()) == sorted(
        ["README.md", "src/app.py", "one.txt", "more.txt", "last.txt"])


async def test_rebase_replays_each_commit_with_its_author_on_top_of_the_target(tmp_path: Path) -> None:
    repo, spaces, one, _ = await _two_sessions(tmp_path)
    (one / "README.md").write_text("hello\n")  # keep README as on main: no conflict with main's change
    commit_all(one, "add one.txt")
    (one / "more.txt").write_text("more\n")
    commit_all(one, "add more.txt")
    (repo / "main.txt").write_text("main moved on\n")
    main_before = commit_all(repo, "main moves")
    merged = await spaces.merge("s-1", "rebase", ended=False)
    history = git(repo, "log", "--format=%s|%an|%ae|%P", f"{main_before}..{merged.commit}").splitlines()
    assert [line.split("|")[:3] for line in history] == [
        ["add more.txt", IDENTITY["GIT_AUTHOR_NAME"], IDENTITY["GIT_AUTHOR_EMAIL"]],
        ["add one.txt", IDENTITY["GIT_AUTHOR_NAME"], IDENTITY["GIT_AUTHOR_EMAIL"]],
    ]
    assert all(len(line.split("|")[3].split()) == 1 for line in history)  # linear
    assert git(repo, "rev-parse", "main") == merged.commit
    # the worktree's branch now is the rebased history, and its diff is against the old target
    assert git(one, "rev-parse", "HEAD") == merged.commit and git(one, "status", "--porcelain") == ""
    record = spaces.record("s-1")
    assert record is not None and record.base == main_before
    assert [f.path for f in (await spaces.diff("s-1")).files] == ["more.txt", "one.txt"]


async def test_a_dirty_target_refuses_the_merge_and_changes_nothing(tmp_path: Path) -> None:
    repo, spaces, one, two = await _two_sessions(tmp_path)
    (repo / "src" / "app.py").write_text("edited in the target\n")
    before = _everything(repo, one, two)
    with pytest.raises(TargetDirty) as caught:
        await spaces.merge("s-1", "merge", ended=False)
    assert caught.value.data == {"files": ["src/app.py"]}
    assert _everything(repo, one, two) == before


async def test_untracked_files_the_merge_would_overwrite_refuse_it(tmp_path: Path) -> None:
    repo, spaces, one, two = await _two_sessions(tmp_path)
    (repo / "one.txt").write_text("the user's own, untracked\n")
    (repo / "unrelated.txt").write_text("fine\n")
    before = _everything(repo, one, two)
    with pytest.raises(TargetDirty) as caught:
        await spaces.merge("s-1", "squash", ended=False)
    assert caught.value.data == {"files": ["one.txt"]}
    assert _everything(repo, one, two) == before


async def test_nothing_to_merge_answers_the_targets_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state")
    await new_session(spaces, "s-1", repo)
    head = git(repo, "rev-parse", "HEAD")
    assert (await spaces.merge("s-1", "merge", ended=False)).commit == head
    assert git(repo, "rev-parse", "HEAD") == head


async def test_a_detached_target_is_refused(tmp_path: Path) -> None:
    repo, spaces, _, _ = await _two_sessions(tmp_path)
    git(repo, "checkout", "-q", "--detach")
    with pytest.raises(BadRequest, match="detached HEAD"):
        await spaces.merge("s-1", "merge", ended=False)


async def test_merging_an_ended_session_removes_its_worktree_and_branch(tmp_path: Path) -> None:
    repo, spaces, one, _ = await _two_sessions(tmp_path)
    await spaces.merge("s-1", "merge", ended=True)
    assert not one.exists() and git(repo, "branch", "--list", "corral/one") == ""
    assert str(one) not in git(repo, "worktree", "list")
    record = spaces.record("s-1")
    assert record is not None and record.removed and record.state == "merged"


async def test_commit_commits_everything_and_nothing_is_a_bad_request(tmp_path: Path) -> None:
    repo, spaces, one, _ = await _two_sessions(tmp_path)
    done = await spaces.commit("s-1", "work in progress")
    assert git(one, "rev-parse", "HEAD") == done.commit
    assert git(one, "log", "-1", "--format=%s") == "work in progress"
    assert git(one, "status", "--porcelain") == ""
    assert git(one, "show", "--name-only", "--format=", "HEAD").split() == ["README.md", "one.txt"]
    with pytest.raises(BadRequest, match="nothing to commit"):
        await spaces.commit("s-1", "again")
    with pytest.raises(BadRequest, match="message"):
        await spaces.commit("s-1", "  ")
    assert git(repo, "rev-parse", "main") != done.commit
