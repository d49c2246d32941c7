"""The pure parts of a diff: ``diff-tree --raw --numstat -z`` parsing and the byte bound."""

from __future__ import annotations

from actors.workspace.changes import TRUNCATED, bound_diff, parse_changes
from protocol.models import FileChange

_Z = "0" * 40


def test_raw_and_numstat_records_become_file_changes() -> None:
    raw = (f":000000 100644 {_Z} {'1' * 40} A\0new.txt\0"
           f":100644 100644 {'2' * 40} {'3' * 40} M\0dir/with space.py\0"
           f":100644 000000 {'4' * 40} {_Z} D\0gone\0"
           f":100644 100755 {'5' * 40} {'6' * 40} T\0tool\0"
           f":000000 100644 {_Z} {'7' * 40} A\0image.png\0"
           "3\t0\tnew.txt\0" "1\t2\tdir/with space.py\0" "0\t5\tgone\0" "0\t0\ttool\0" "-\t-\timage.png\0").encode()
    assert parse_changes(raw) == [
        FileChange(path="new.txt", status="added", added=3, removed=0),
        FileChange(path="dir/with space.py", status="modified", added=1, removed=2),
        FileChange(path="gone", status="deleted", added=0, removed=5),
        FileChange(path="tool", status="modified", added=0, removed=0),
        FileChange(path="image.png", status="added", added=0, removed=0),
    ]


def test_no_output_is_no_change() -> None:
    assert parse_changes(b"") == []


def test_a_diff_within_the_limit_is_whole() -> None:
    assert bound_diff(b"a\nb\n", 0) == ("a\nb\n", False)


def test_a_cut_diff_ends_at_a_whole_line_and_says_how_much_is_missing() -> None:
    text, truncated = bound_diff(b"line one\nline tw", 100)
    assert truncated
    assert text == "line one\n" + TRUNCATED.format(107)  # "line tw" and the 100 bytes after it
    assert text.splitlines()[-1] == "[diff truncated: 107 more bytes]"


def test_a_cut_in_the_middle_of_a_character_never_reaches_the_text() -> None:
    kept = "é\n".encode() + "ü".encode()[:1]
    text, truncated = bound_diff(kept, 1)
    assert truncated and text == "é\n[diff truncated: 2 more bytes]"
