"""Branch and base names: hostile ones are refused with a message that speaks of git."""

from __future__ import annotations

import pytest

from actors.workspace.names import check_base, check_branch, default_branch, ref_part
from protocol.errors import BadRequest

HOSTILE = ["../x", "-f", "a..b", "x" * 300, "a\0b", "a\nb", "--force", "", "HEAD", "a b",
           "a~1", "a^", "a:b", "a?", "a*", "a[b", "a\\b", "x.lock", "a/.b", "a//b", "/a", "a/",
           "a.", "a@{1}", "\x7f"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_branch_names_are_refused_naming_git(name: str) -> None:
    with pytest.raises(BadRequest) as caught:
        check_branch(name)
    assert "git" in caught.value.message and caught.value.data == {"field": "workspace.branch"}


@pytest.mark.parametrize("name", ["feature/x", "corral/ñandú", "a-b_c.d", "x" * 200, "v1.2"])
def test_ordinary_branch_names_pass(name: str) -> None:
    assert check_branch(name) == name


@pytest.mark.parametrize("base", ["-f", "a..b", "a...b", "x" * 300, "a\0b", "a\nb", "", "--all"])
def test_hostile_bases_are_refused_naming_git(base: str) -> None:
    with pytest.raises(BadRequest) as caught:
        check_base(base)
    assert "git" in caught.value.message and caught.value.data == {"field": "workspace.base"}


@pytest.mark.parametrize("base", ["HEAD", "HEAD~2", "main@{1}", "v1.0^{commit}", "0123abcd"])
def test_revisions_pass_to_git(base: str) -> None:
    assert check_base(base) == base


@pytest.mark.parametrize(("label", "part"), [
    ("s-0123456789ab", "s-0123456789ab"),
    ("my session!", "my-session"),
    ("..hidden..name..", "hidden.name"),
    ("-dash", "dash"),
    ("x.lock", "x"),
    ("a.lock.lock.", "a"),
    ("ünï/cödé", "n-c-d"),
    ("é", ""),
])
def test_labels_become_valid_ref_parts(label: str, part: str) -> None:
    assert ref_part(label) == part
    if part:
        check_branch(f"corral/{part}")


def test_the_default_branch_is_corral_slash_label_and_never_empty() -> None:
    assert default_branch("fix the tests") == "corral/fix-the-tests"
    assert default_branch("???") == "corral/session"
    assert len(default_branch("x" * 500)) == len("corral/") + 60
