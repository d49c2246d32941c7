"""Which code ``corral start`` runs: a source tree goes on the daemon's ``PYTHONPATH``, an
installed copy does not (the wheel test checks a real daemon from a venv)."""

from __future__ import annotations

import os
import site
import subprocess
import sys
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


_RUNNER = """
import gc, sys
from pathlib import Path
import msgspec
from supervisor.cli import daemonctl
from supervisor.statedir import DaemonFile

class Root(msgspec.Struct):
    pass

async def run(root, loaded, *, port=None, task_status):
    before = gc.get_freeze_count()
    task_status.started(DaemonFile(pid=1, url="ws://127.0.0.1:1/v1", socket="s", version="0",
                                   started_at="2026-01-01T00:00:00.000Z"))
    print(before, gc.get_freeze_count(), flush=True)

daemonctl.run_foreground(Path(sys.argv[1]), run, Root, port=None, config=sys.argv[2])
"""


def test_corral_daemon_freezes_its_start_up_heap_once_ready(tmp_path: Path) -> None:
    # In a process of its own: a frozen heap is the process's for good.
    config = tmp_path / "corral.toml"
    config.write_text("")
    done = subprocess.run([sys.executable, "-c", _RUNNER, str(tmp_path / "state"), str(config)],
                          capture_output=True, text=True, timeout=60, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    before, after = map(int, done.stdout.split())
    assert before == 0 and after > 1000
