"""Diffs of worktrees with real git: each session sees its own changes, and only those."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.workspace.changes import TRUNCATED
from protocol.errors import Unsupported
from protocol.models import FileChange

from .gitrig import commit_all, fingerprint, git, make_repo, new_session, workspaces

pytestmark = pytest.mark.timeout(120)


async def test_two_worktrees_each_see_only_their_own_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state")
    one = await new_session(spaces, "s-1", repo, name="one")
    two = await new_session(spaces, "s-2", repo, name="two")
    (Path(one.path) / "one.txt").write_text("from one\n")
    (Path(one.path) / "README.md").write_text("hello\nfrom one\n")
    commit_all(Path(one.path), "one's commit")
    (Path(one.path) / "src" / "app.py").write_text("print('one')\n")  # uncommitted
    (Path(two.path) / "two.txt").write_text("from two\n")  # untracked
    (Path(two.path) / "README.md").write_text("hello\nfrom two\n")

    first = await spaces.diff("s-1")
    assert first.files == [
        FileChange(path="README.md", status="modified", added=1, removed=0),
        FileChange(path="one.txt", status="added", added=1, removed=0),
        FileChange(path="src/app.py", status="modified", added=1, removed=1),
    ]
    assert "+from one" in first.diff and "+print('one')" in first.diff and "from two" not in first.diff
    assert "diff --git a/one.txt b/one.txt" in first.diff and not first.truncated
    second = await spaces.diff("s-2")
    assert [(f.path, f.status) for f in second.files] == [("README.md", "modified"), ("two.txt", "added")]
    assert "+from two" in second.diff and "one" not in second.diff
    # The source checkout saw nothing.
    assert git(repo, "status", "--porcelain") == ""


async def test_a_diff_never_touches_the_agents_index_or_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state")
    record = await new_session(spaces, "s-1", repo)
    work = Path(record.path)
    (work / "staged.txt").write_text("staged\n")
    git(work, "add", "staged.txt")
    (work / "loose.txt").write_text("loose\n")
    (work / "README.md").unlink()
    status = git(work, "status", "--porcelain")
    before = fingerprint(work, Path(record.git_dir))
    stat = await spaces.diff("s-1", stat=True)
    assert stat.diff == "" and [(f.path, f.status) for f in stat.files] == [
        ("README.md", "deleted"), ("loose.txt", "added"), ("staged.txt", "added")]
    assert fingerprint(work, Path(record.git_dir)) == before
    assert git(work, "status", "--porcelain") == status


async def test_ignored_files_are_not_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": "build/\n", "a.txt": "a\n"})
    spaces = workspaces(tmp_path / "state")
    record = await new_session(spaces, "s-1", repo)
    (Path(record.path) / "build").mkdir()
    (Path(record.path) / "build" / "out.o").write_text("binary-ish\n")
    assert (await spaces.diff("s-1")).files == []


async def test_a_long_diff_is_cut_at_the_limit_with_a_last_line_saying_so(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state", diff_limit=4096)
    record = await new_session(spaces, "s-1", repo)
    (Path(record.path) / "big.txt").write_text("".join(f"line {n}\n" for n in range(5000)))
    result = await spaces.diff("s-1")
    assert result.truncated
    body, last = result.diff.rsplit("\n", 1)
    assert len(body.encode()) < 4096 and last.startswith("[diff truncated: ") and last.endswith(" more bytes]")
    missing = int(last.removeprefix("[diff truncated: ").removesuffix(" more bytes]"))
    assert TRUNCATED.format(missing) == last
    unbounded = workspaces(tmp_path / "state", diff_limit=10**8)
    unbounded.load()
    whole = (await unbounded.diff("s-1")).diff
    assert not (await unbounded.diff("s-1")).truncated
    assert whole.startswith(body) and len((body + "\n").encode()) + missing == len(whole.encode())
    assert result.files == [FileChange(path="big.txt", status="added", added=5000, removed=0)]


async def test_a_session_without_a_worktree_is_unsupported(tmp_path: Path) -> None:
    spaces = workspaces(tmp_path / "state")
    with pytest.raises(Unsupported, match="no worktree"):
        await spaces.diff("s-none")


async def test_after_a_result_the_count_is_announced_only_when_it_moved(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    spaces = workspaces(tmp_path / "state")
    record = await new_session(spaces, "s-1", repo)
    assert await spaces.after_result("s-1") is None  # nothing changed yet
    (Path(record.path) / "a.txt").write_text("a\n")
    (Path(record.path) / "b.txt").write_text("b\n")
    event = await spaces.after_result("s-1")
    assert event is not None and (event.state, event.changed_files) == ("changed", 2)
    assert event.branch == record.branch and event.path == record.path
    assert await spaces.after_result("s-1") is None  # same count: nothing to say
    assert await spaces.after_result("s-without-worktree") is None
    info = spaces.record("s-1")
    assert info is not None and info.changed_files == 2
