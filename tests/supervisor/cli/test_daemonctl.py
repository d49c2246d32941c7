"""Which code ``corral start`` runs: a source tree goes on the daemon's ``PYTHONPATH``, an
installed copy does not (the wheel test checks a real daemon from a venv)."""

from __future__ import annotations

import site
from pathlib import Path

import pytest

from supervisor.cli import daemonctl

REPO = Path(__file__).resolve().parents[3]


def test_a_source_tree_is_put_on_the_daemons_path() -> None:
    assert daemonctl._source_root() == str(REPO)


@pytest.mark.parametrize("user", [False, True])
def test_an_installed_copy_is_left_to_the_interpreter(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path, user: bool) -> None:
    sites = [str(tmp_path / "elsewhere"), str(REPO)]
    monkeypatch.setattr(site, "getsitepackages", lambda: sites[:1] if user else sites)
    monkeypatch.setattr(site, "getusersitepackages", lambda: sites[1] if user else sites[0])
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)
    assert daemonctl._source_root() is None
    monkeypatch.setattr(site, "ENABLE_USER_SITE", False)
    assert (daemonctl._source_root() is None) is not user
