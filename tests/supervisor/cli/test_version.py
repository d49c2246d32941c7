"""``corral --version`` and ``corral version [--json]``: the running code's version, and the
installed versions of Python and the main libraries (the wheel test checks them from a venv)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from actors.app import main
from supervisor import __version__
from supervisor.cli.version import MISSING, versions

REPO = Path(__file__).resolve().parents[3]
NAMES = ["corral", "python", "trio", "google-adk", "mcp"]


def test_the_version_flag_prints_one_line_from_the_console_script() -> None:
    done = subprocess.run([sys.executable, "-m", "actors.app", "--version"], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          timeout=120, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"corral {__version__}\n", "")


def test_version_json_is_one_object_of_version_strings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    found = json.loads(out)
    assert list(found) == NAMES
    assert found == {"corral": __version__, "python": platform.python_version(),
                     **{name: metadata.version(name) for name in NAMES[2:]}}


def test_plain_version_is_a_name_and_a_version_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert rows == [[name, version] for name, version in versions(NAMES[3:]).items()]
    assert [name for name, _ in rows] == NAMES


def test_a_distribution_that_is_not_installed_says_so() -> None:
    found = versions(["no-such-distribution-of-corral"])
    assert found["no-such-distribution-of-corral"] == MISSING
    assert found["trio"] == metadata.version("trio")
