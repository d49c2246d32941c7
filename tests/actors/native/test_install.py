"""``adk_installed`` answers from the import system's finders without importing ADK (the daemon
asks it at start, where ``google.adk``'s import would cost it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.daemonproc import REPO

_CHECK = ("import sys; from actors.native.daemon.install import adk_installed; "
          "print(adk_installed(), 'google.adk' in sys.modules)")


def _check(*path: Path) -> str:
    env_path = ":".join([*(str(p) for p in path), str(REPO)])
    return subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True,
                          check=True, cwd=REPO, env={"PYTHONPATH": env_path}).stdout.strip()


def test_an_installed_adk_is_found_without_importing_it() -> None:
    assert _check() == "True False"


def test_an_adk_without_its_runners_is_not_installed(tmp_path: Path) -> None:
    adk = tmp_path / "google" / "adk"  # a portion of the ``google`` namespace found first
    adk.mkdir(parents=True)
    (adk / "__init__.py").write_text("")
    assert _check(tmp_path) == "False False"
