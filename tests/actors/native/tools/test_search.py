"""grep, find and ls: gitignore-aware, sorted, bounded, and never through symlinks."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.native.tools import ToolErrorCode, Workspace

from .support import call, small


@pytest.fixture
def tree(root: Path, tmp_path: Path) -> Path:
    """A small repository with ignore rules, a .git directory and symlinks in and out."""
    files = {
        ".gitignore": "build/\n*.log\n!keep.log\n/top.txt\n",
        "src/a.py": "needle = 1\n",
        "src/b.txt": "needle\n",
        "src/top.txt": "needle (not anchored here)\n",
        "src/gen/.gitignore": "*.py\n",
        "src/gen/made.py": "needle\n",
        "src/gen/keep.txt": "needle\n",
        "build/out.py": "needle\n",
        "debug.log": "needle\n",
        "keep.log": "needle\n",
        "top.txt": "needle\n",
        ".git/config": "needle\n",
        "z.bin": "needle\x00\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "leak.py").write_text("needle\n")
    (root / "out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (root / "again").symlink_to(root / "src", target_is_directory=True)
    (root / "alias.py").symlink_to(root / "src" / "a.py")
    return root


VISIBLE = ["keep.log", "src/a.py", "src/b.txt", "src/gen/keep.txt", "src/top.txt"]


def test_grep_honours_gitignore_skips_git_binaries_and_symlinks(ws: Workspace, tree: Path) -> None:
    outcome = call(ws, "grep", pattern="needle")
    assert [line.split(":")[0] for line in outcome.text.splitlines()[:-1]] == VISIBLE
    assert outcome.text.splitlines()[-1] == "[1 binary, unreadable or oversized files skipped]"
    assert outcome.count == 5


def test_grep_glob_and_single_file(ws: Workspace, tree: Path) -> None:
    assert call(ws, "grep", pattern="needle", glob="*.py").text == "src/a.py:1:needle = 1"
    assert call(ws, "grep", pattern="needle", path="src", glob="gen/*.txt").text == "src/gen/keep.txt:1:needle"
    assert call(ws, "grep", pattern="= 1$", path="src/a.py").text == "src/a.py:1:needle = 1"


def test_find_honours_gitignore_and_lists_symlinks_without_entering_them(ws: Workspace, tree: Path) -> None:
    outcome = call(ws, "find", pattern="*")
    assert outcome.text.splitlines() == [
        ".gitignore", "again", "alias.py", "keep.log", "out", "src/", "src/a.py", "src/b.txt",
        "src/gen/", "src/gen/.gitignore", "src/gen/keep.txt", "src/top.txt", "z.bin",
    ]
    assert call(ws, "find", pattern="**/*.py").text.splitlines() == ["alias.py", "src/a.py"]
    assert call(ws, "find", pattern="gen/*", path="src").text.splitlines() == ["src/gen/.gitignore", "src/gen/keep.txt"]


def test_ls_marks_kinds_and_counts_ignored_entries(ws: Workspace, tree: Path) -> None:
    outcome = call(ws, "ls")
    assert outcome.text.splitlines() == [
        ".gitignore", f"again@ -> {tree / 'src'}", f"alias.py@ -> {tree / 'src' / 'a.py'}", "keep.log",
        f"out@ -> {tree.parent / 'elsewhere'}", "src/", "z.bin",
        "[3 entries ignored by .gitignore not shown]",
    ]
    assert call(ws, "ls", path="src/gen").text == ".gitignore\nkeep.txt\n[1 entry ignored by .gitignore not shown]"


def test_walk_below_the_root_honours_ancestor_ignore_files(ws: Workspace, tree: Path) -> None:
    (tree / "src" / "x.log").write_text("needle\n")
    assert "src/x.log" not in call(ws, "grep", pattern="needle", path="src").text


def test_results_are_capped_and_say_so(tree: Path) -> None:
    ws = small(tree, find_max_results=3, grep_max_matches=2, ls_max_entries=2)
    found = call(ws, "find", pattern="*")
    assert found.truncated and found.text.splitlines() == [".gitignore", "again", "alias.py", "[showing the first 3 paths; narrow the pattern or path]"]
    grepped = call(ws, "grep", pattern="needle")
    assert grepped.truncated and grepped.count == 2 and "[showing the first 2 matches" in grepped.text
    listed = call(ws, "ls")
    assert listed.truncated and listed.count == 2 and "[showing the first 2 entries]" in listed.text


def test_walk_visits_are_bounded(tree: Path) -> None:
    outcome = call(small(tree, walk_max_entries=4), "find", pattern="*.txt")
    assert outcome.truncated and "stopped after 4 entries" in outcome.text


def test_search_errors(ws: Workspace, tree: Path) -> None:
    assert call(ws, "grep", pattern="(").code is ToolErrorCode.INVALID_ARGUMENTS
    assert call(ws, "ls", path="src/a.py").code is ToolErrorCode.NOT_A_DIRECTORY
    assert call(ws, "find", pattern="*", path="nope").code is ToolErrorCode.NOT_FOUND
    assert call(ws, "grep", pattern="zzz", path="src").text == "No lines match 'zzz' in src."
