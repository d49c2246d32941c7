"""The gitignore subset and glob syntax, as pure functions."""

from __future__ import annotations

import pytest

from actors.native.tools.gitignore import is_ignored, parse_gitignore
from actors.native.tools.globs import compile_glob


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "d/e/a.py", True),
        ("a/**", "a/b/c", True),
        ("a/**", "a", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a?c", "abc", True),
        ("a?c", "a/c", False),
        ("[!a]x", "bx", True),
        ("[!a]x", "ax", False),
        ("[a-c]1", "b1", True),
        ("a[/]b", "a/b", False),
        ("\\*", "*", True),
        ("\\*", "x", False),
        ("[x", "[x", True),
        ("a.b", "axb", False),
    ],
)
def test_glob(pattern: str, path: str, matches: bool) -> None:
    assert bool(compile_glob(pattern).fullmatch(path)) is matches


RULES = """
# a comment
*.log
!keep.log
build/
/only-root.txt
docs/*.md
\\#literal
spaced.txt   
"""


@pytest.mark.parametrize(
    ("path", "is_dir", "ignored"),
    [
        ("x.log", False, True),
        ("deep/x.log", False, True),
        ("keep.log", False, False),
        ("build", True, True),
        ("build", False, False),  # dir-only rule
        ("src/build", True, True),
        ("only-root.txt", False, True),
        ("src/only-root.txt", False, False),  # anchored
        ("docs/a.md", False, True),
        ("docs/sub/a.md", False, False),
        ("#literal", False, True),
        ("spaced.txt", False, True),  # trailing spaces trimmed
        ("# a comment", False, False),
    ],
)
def test_rules(path: str, is_dir: bool, ignored: bool) -> None:
    assert is_ignored(path, is_dir, parse_gitignore(RULES, "")) is ignored


def test_rules_of_a_nested_file_apply_only_below_it_and_deeper_rules_win() -> None:
    rules = parse_gitignore("*.gen\n", "") + parse_gitignore("!keep.gen\n/local\n", "pkg")
    assert is_ignored("a.gen", False, rules)
    assert not is_ignored("pkg/keep.gen", False, rules)
    assert is_ignored("keep.gen", False, rules)
    assert is_ignored("pkg/local", False, rules) and not is_ignored("local", False, rules)
