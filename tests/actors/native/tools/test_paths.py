"""Every path is confined to the session cwd after symlinks are resolved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.native.tools import ToolErrorCode, Workspace

from .support import call

OUTSIDE = "secret\n"

# One call per path-taking tool, aimed at ``{p}``.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read", {"path": "{p}"}),
    ("write", {"path": "{p}", "content": "pwned\n"}),
    ("edit", {"path": "{p}", "old_string": "secret", "new_string": "pwned"}),
    ("grep", {"pattern": "secret", "path": "{p}"}),
    ("find", {"pattern": "*", "path": "{p}"}),
    ("ls", {"path": "{p}"}),
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file next to the workspace, and a directory holding one."""
    (tmp_path / "secret.txt").write_text(OUTSIDE)
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "secret.txt").write_text(OUTSIDE)
    return tmp_path


def _refused(ws: Workspace, name: str, template: dict[str, Any], path: str) -> None:
    args = {k: v.format(p=path) if isinstance(v, str) else v for k, v in template.items()}
    outcome = call(ws, name, **args)
    assert outcome.is_error and outcome.code is ToolErrorCode.PATH_OUTSIDE_WORKSPACE, outcome
    assert "outside the workspace" in outcome.text


@pytest.mark.parametrize(("name", "template"), CALLS, ids=[n for n, _ in CALLS])
def test_dotdot_is_refused(ws: Workspace, outside: Path, name: str, template: dict[str, Any]) -> None:
    target = "../secret.txt" if name in ("read", "write", "edit") else "../private"
    _refused(ws, name, template, target)
    assert (outside / "secret.txt").read_text() == OUTSIDE


@pytest.mark.parametrize(("name", "template"), CALLS, ids=[n for n, _ in CALLS])
def test_absolute_path_outside_is_refused(ws: Workspace, outside: Path, name: str, template: dict[str, Any]) -> None:
    target = outside / ("secret.txt" if name in ("read", "write", "edit") else "private")
    _refused(ws, name, template, str(target))
    assert (outside / "secret.txt").read_text() == OUTSIDE


def test_dotdot_that_stays_inside_and_absolute_paths_inside_are_allowed(ws: Workspace, root: Path) -> None:
    (root / "a").mkdir()
    (root / "b.txt").write_text("hello\n")
    assert call(ws, "read", path="a/../b.txt").total_lines == 1
    assert call(ws, "read", path=str(root / "b.txt")).path == "b.txt"


@pytest.mark.parametrize("name", ["read", "write", "edit"])
def test_symlinked_file_pointing_out_is_refused(ws: Workspace, root: Path, outside: Path, name: str) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    template = dict(CALLS)[name]
    _refused(ws, name, template, "link.txt")
    assert (outside / "secret.txt").read_text() == OUTSIDE


def test_dangling_symlink_pointing_out_cannot_be_written_through(ws: Workspace, root: Path, outside: Path) -> None:
    (root / "new.txt").symlink_to(outside / "created.txt")
    _refused(ws, "write", dict(CALLS)["write"], "new.txt")
    assert not (outside / "created.txt").exists()


@pytest.mark.parametrize(("name", "template"), CALLS, ids=[n for n, _ in CALLS])
def test_symlinked_directory_pointing_out_is_refused(
    ws: Workspace, root: Path, outside: Path, name: str, template: dict[str, Any]
) -> None:
    (root / "linkdir").symlink_to(outside / "private", target_is_directory=True)
    target = "linkdir/secret.txt" if name in ("read", "write", "edit") else "linkdir"
    _refused(ws, name, template, target)
    assert (outside / "private" / "secret.txt").read_text() == OUTSIDE


def test_symlink_to_a_file_inside_is_followed(ws: Workspace, root: Path) -> None:
    (root / "real.txt").write_text("one\n")
    (root / "alias.txt").symlink_to("real.txt")
    assert call(ws, "read", path="alias.txt").path == "real.txt"
    assert not call(ws, "edit", path="alias.txt", old_string="one", new_string="two").is_error
    assert (root / "alias.txt").is_symlink() and (root / "real.txt").read_text() == "two\n"
