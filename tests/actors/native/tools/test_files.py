"""read, write and the read-before-write rule; atomic replacement keeping modes."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.native.tools import ToolErrorCode, Workspace

from .support import call, small


def test_read_shows_a_numbered_window_with_total_and_hash(ws: Workspace, root: Path) -> None:
    data = "".join(f"line {n}\n" for n in range(1, 11)).encode()
    (root / "f.txt").write_bytes(data)
    outcome = call(ws, "read", path="f.txt", offset=3, limit=2)
    assert not outcome.is_error
    assert outcome.text.splitlines()[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "continue with offset=5" in outcome.text
    assert (outcome.start_line, outcome.end_line, outcome.total_lines) == (3, 4, 10)
    assert outcome.hash == hashlib.sha256(data).hexdigest()


def test_read_defaults_to_the_configured_window(root: Path) -> None:
    (root / "f.txt").write_text("x\n" * 50)
    outcome = call(small(root, read_default_lines=20), "read", path="f.txt")
    assert (outcome.start_line, outcome.end_line, outcome.total_lines, outcome.truncated) == (1, 20, 50, True)


def test_read_window_is_cut_to_the_call_budget_and_says_where_to_continue(root: Path) -> None:
    (root / "f.txt").write_text("".join(f"{n:0100d}\n" for n in range(100)))
    outcome = call(small(root, call_output_bytes=2000), "read", path="f.txt")
    assert outcome.end_line is not None and 1 < outcome.end_line < 100
    assert f"continue with offset={outcome.end_line + 1}" in outcome.text
    assert len(outcome.text.encode()) <= 2000


def test_read_past_the_end_is_an_error(ws: Workspace, root: Path) -> None:
    (root / "f.txt").write_text("a\nb\n")
    outcome = call(ws, "read", path="f.txt", offset=3)
    assert outcome.code is ToolErrorCode.INVALID_ARGUMENTS and "2 lines" in outcome.text


@pytest.mark.parametrize("data", [b"text\x00more\n", b"caf\xe9\n"], ids=["nul", "latin1"])
def test_binary_file_is_refused(ws: Workspace, root: Path, data: bytes) -> None:
    (root / "b.dat").write_bytes(data)
    outcome = call(ws, "read", path="b.dat")
    assert outcome.code is ToolErrorCode.BINARY_FILE and "b.dat" in outcome.text


def test_oversize_file_is_refused(root: Path) -> None:
    (root / "big.txt").write_text("x" * 101)
    (root / "ok.txt").write_text("x" * 100)
    ws = small(root, read_max_bytes=100)
    outcome = call(ws, "read", path="big.txt")
    assert outcome.code is ToolErrorCode.TOO_LARGE and "101 bytes" in outcome.text
    assert not call(ws, "read", path="ok.txt").is_error


def test_write_of_an_existing_unread_file_is_refused(ws: Workspace, root: Path) -> None:
    (root / "f.txt").write_text("original\n")
    outcome = call(ws, "write", path="f.txt", content="new\n")
    assert outcome.code is ToolErrorCode.NOT_READ
    assert (root / "f.txt").read_text() == "original\n"


def test_edit_of_an_unread_file_is_refused(ws: Workspace, root: Path) -> None:
    (root / "f.txt").write_text("original\n")
    outcome = call(ws, "edit", path="f.txt", old_string="original", new_string="new")
    assert outcome.code is ToolErrorCode.NOT_READ
    assert (root / "f.txt").read_text() == "original\n"


@pytest.mark.parametrize("tool", ["write", "edit"])
def test_file_changed_since_read_is_refused_as_stale(ws: Workspace, root: Path, tool: str) -> None:
    (root / "f.txt").write_text("original\n")
    assert not call(ws, "read", path="f.txt").is_error
    (root / "f.txt").write_text("changed by someone else\n")
    if tool == "write":
        outcome = call(ws, "write", path="f.txt", content="mine\n")
    else:
        outcome = call(ws, "edit", path="f.txt", old_string="changed", new_string="mine")
    assert outcome.code is ToolErrorCode.STALE_READ
    assert (root / "f.txt").read_text() == "changed by someone else\n"
    assert not call(ws, "read", path="f.txt").is_error  # reading again clears it
    assert not call(ws, "write", path="f.txt", content="mine\n").is_error


def test_same_size_change_is_caught_by_the_hash(ws: Workspace, root: Path) -> None:
    path = root / "f.txt"
    path.write_text("aaaa\n")
    call(ws, "read", path="f.txt")
    before = path.stat()
    path.write_text("bbbb\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert call(ws, "write", path="f.txt", content="c\n").code is ToolErrorCode.STALE_READ


def test_own_write_and_edit_count_as_reads(ws: Workspace, root: Path) -> None:
    assert call(ws, "write", path="f.txt", content="one\n").created is True
    assert not call(ws, "edit", path="f.txt", old_string="one", new_string="two").is_error
    assert not call(ws, "edit", path="f.txt", old_string="two", new_string="three").is_error
    outcome = call(ws, "write", path="f.txt", content="four\n")
    assert not outcome.is_error and outcome.created is False
    assert (root / "f.txt").read_text() == "four\n"


@pytest.fixture
def strict_umask() -> Iterator[None]:
    """A umask that would give 0600 files, so 0644 proves the mode is set on purpose."""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("strict_umask")
def test_new_file_is_0644_in_new_directories_and_diffed_against_empty(ws: Workspace, root: Path) -> None:
    outcome = call(ws, "write", path="deep/er/new.txt", content="a\nb\n")
    assert not outcome.is_error and outcome.created
    assert (root / "deep/er/new.txt").stat().st_mode & 0o777 == 0o644
    assert outcome.diff is not None and outcome.diff.startswith("--- /dev/null\n+++ b/deep/er/new.txt\n")
    assert "+a\n+b\n" in outcome.diff
    assert outcome.hash == hashlib.sha256(b"a\nb\n").hexdigest()


@pytest.mark.parametrize("tool", ["write", "edit"])
def test_mode_is_kept(ws: Workspace, root: Path, tool: str) -> None:
    path = root / "run.sh"
    path.write_text("echo old\n")
    path.chmod(0o750)
    call(ws, "read", path="run.sh")
    if tool == "write":
        outcome = call(ws, "write", path="run.sh", content="echo new\n")
    else:
        outcome = call(ws, "edit", path="run.sh", old_string="old", new_string="new")
    assert not outcome.is_error
    assert path.read_text() == "echo new\n" and path.stat().st_mode & 0o777 == 0o750


def test_write_replaces_atomically_and_leaves_no_temp_file(ws: Workspace, root: Path) -> None:
    path = root / "f.txt"
    path.write_text("old\n")
    inode = path.stat().st_ino
    call(ws, "read", path="f.txt")
    outcome = call(ws, "write", path="f.txt", content="new\n")
    assert outcome.diff == "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-old\n+new\n"
    assert path.stat().st_ino != inode  # renamed over, not rewritten in place
    assert sorted(p.name for p in root.iterdir()) == ["f.txt"]


def test_write_onto_a_directory_is_refused(ws: Workspace, root: Path) -> None:
    (root / "d").mkdir()
    assert call(ws, "write", path="d", content="x").code is ToolErrorCode.NOT_A_FILE
    assert call(ws, "read", path="d").code is ToolErrorCode.NOT_A_FILE
    assert call(ws, "read", path="missing.txt").code is ToolErrorCode.NOT_FOUND


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_owner_of_a_replaced_file_is_kept(ws: Workspace, root: Path) -> None:
    path = root / "theirs.txt"
    path.write_text("a\n")
    os.chown(path, 65534, 65534)
    call(ws, "read", path="theirs.txt")
    assert not call(ws, "edit", path="theirs.txt", old_string="a", new_string="b").is_error
    assert (path.stat().st_uid, path.stat().st_gid) == (65534, 65534)


def test_special_files_are_not_opened(ws: Workspace, root: Path) -> None:
    os.mkfifo(root / "pipe")  # opening it for reading would block for ever
    assert call(ws, "read", path="pipe").code is ToolErrorCode.NOT_A_FILE
    assert call(ws, "grep", pattern="x", path="pipe").code is ToolErrorCode.NOT_A_FILE
    assert call(ws, "write", path="pipe", content="x").code is ToolErrorCode.NOT_A_FILE
    assert call(ws, "grep", pattern="x").text == "No lines match 'x' in .."
