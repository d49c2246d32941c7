"""A fresh session cwd and workspace per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.native.tools import Workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The session cwd; ``tmp_path`` itself stays outside it, for escape attempts."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root)
