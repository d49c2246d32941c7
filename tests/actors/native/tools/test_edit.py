"""edit: matching strategies, ambiguity, and what of the file's shape is preserved."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.native.tools import ToolError, ToolErrorCode, Workspace
from actors.native.tools.matching import apply_edit

from .support import call


def _edit(ws: Workspace, root: Path, data: bytes, old: str, new: str, *, replace_all: bool = False) -> bytes:
    """Write ``data`` to f.txt, read it, edit it; the bytes on disk afterwards."""
    (root / "f.txt").write_bytes(data)
    assert not call(ws, "read", path="f.txt").is_error
    outcome = call(ws, "edit", path="f.txt", old_string=old, new_string=new, replace_all=replace_all)
    assert not outcome.is_error, outcome.text
    return (root / "f.txt").read_bytes()


def test_ambiguous_match_lists_every_candidate_and_changes_nothing(ws: Workspace, root: Path) -> None:
    data = b"x = 1\ny = 2\nx = 1\n\nx = 1\n"
    path = root / "f.txt"
    path.write_bytes(data)
    call(ws, "read", path="f.txt")
    before = path.stat()
    outcome = call(ws, "edit", path="f.txt", old_string="x = 1", new_string="x = 9")
    assert outcome.code is ToolErrorCode.AMBIGUOUS_MATCH
    assert outcome.candidates == (1, 3, 5) and "1, 3, 5" in outcome.text
    assert path.read_bytes() == data and path.stat().st_mtime_ns == before.st_mtime_ns


def test_replace_all_replaces_every_occurrence(ws: Workspace, root: Path) -> None:
    assert _edit(ws, root, b"a b a b a\n", "a", "c", replace_all=True) == b"c b c b c\n"


def test_no_match_is_an_error_and_changes_nothing(ws: Workspace, root: Path) -> None:
    (root / "f.txt").write_text("hello\n")
    call(ws, "read", path="f.txt")
    outcome = call(ws, "edit", path="f.txt", old_string="goodbye", new_string="x")
    assert outcome.code is ToolErrorCode.NO_MATCH
    assert (root / "f.txt").read_text() == "hello\n"


def test_trailing_whitespace_fallback(ws: Workspace, root: Path) -> None:
    result = _edit(ws, root, b"def f():  \n    return 1\t\nend\n", "def f():\n    return 1\n", "def g():\n    return 2\n")
    assert result == b"def g():\n    return 2\nend\n"
    assert call(ws, "read", path="f.txt").total_lines == 3


def test_indentation_fallback_reindents_the_replacement(ws: Workspace, root: Path) -> None:
    data = b"class A:\n    def f(self):\n        return 1\n"
    result = _edit(ws, root, data, "def f(self):\n    return 1", "def f(self):\n    x = 2\n    return x")
    assert result == b"class A:\n    def f(self):\n        x = 2\n        return x\n"


def test_indentation_fallback_when_old_string_is_indented_more(ws: Workspace, root: Path) -> None:
    result = _edit(ws, root, b"if x:\n  y()\n", "    if x:\n      y()", "    if x:\n      z()")
    assert result == b"if x:\n  z()\n"


def test_exact_match_wins_over_fallbacks() -> None:
    text = "  a  \na\n"
    change = apply_edit(text, "a\n", "b\n", replace_all=False)
    # "a\n" occurs exactly once (line 2; line 1 only matches ignoring whitespace).
    assert change == ("  a  \nb\n", 1, "exact", 2)


def test_fallback_candidates_are_ambiguous_too() -> None:
    with pytest.raises(ToolError) as caught:
        apply_edit("x = 1 \nz\nx = 1\t\n", "x = 1\n", "x = 2\n", replace_all=False)
    assert caught.value.code is ToolErrorCode.AMBIGUOUS_MATCH and caught.value.candidates == (1, 3)


def test_deleting_whole_lines_through_a_fallback_takes_their_newlines() -> None:
    assert apply_edit("a\n  b  \nc\n", "b\n", "", replace_all=False).text == "a\nc\n"


def test_crlf_line_endings_are_kept(ws: Workspace, root: Path) -> None:
    result = _edit(ws, root, b"one\r\ntwo\r\nthree\r\n", "two\nthree", "2\n3\n4")
    assert result == b"one\r\n2\r\n3\r\n4\r\n"


def test_bom_is_kept(ws: Workspace, root: Path) -> None:
    assert _edit(ws, root, b"\xef\xbb\xbfname = 1\n", "name = 1", "name = 2") == b"\xef\xbb\xbfname = 2\n"


def test_missing_final_newline_stays_missing(ws: Workspace, root: Path) -> None:
    assert _edit(ws, root, b"a\nlast", "last", "final\n") == b"a\nfinal"


def test_final_newline_stays_when_old_string_took_it(ws: Workspace, root: Path) -> None:
    assert _edit(ws, root, b"a\nlast\n", "last\n", "final") == b"a\nfinal\n"


def test_edit_result_carries_a_diff_and_match_kind(ws: Workspace, root: Path) -> None:
    (root / "f.txt").write_text("a\n  b \nc\n")
    call(ws, "read", path="f.txt")
    outcome = call(ws, "edit", path="f.txt", old_string="  b\n", new_string="  B\n")
    assert (outcome.match, outcome.replacements) == ("trailing_whitespace", 1)
    assert outcome.diff is not None and "-  b \n+  B\n" in outcome.diff


def test_edit_of_a_missing_file_points_to_write(ws: Workspace) -> None:
    outcome = call(ws, "edit", path="nope.txt", old_string="a", new_string="b")
    assert outcome.code is ToolErrorCode.NOT_FOUND and "write" in outcome.text
