"""The Ray tests (marked ``ray``: on the shared loopback cluster of ``tests.raycluster``) run in
a pytest process of their own, started here, when the whole suite runs.

A Ray cluster's processes (GCS, raylets, their workers) are descendants of the process that
starts them; a pytest worker that hosts one fails every later test of its own that checks it
left no stray descendant, and two workers would start two clusters on two cores. So a
whole-suite run leaves the ``ray`` tests to this one (``tests/conftest.py`` deselects them), which
runs them one after another in a child pytest and fails with its report when any fails. Run
alone (``pytest tests/e2e/test_placement_ray.py``), the Ray tests run in place as usual.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RAY_SUITE

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_ray_tests_pass_in_a_process_of_their_own() -> None:
    pytest.importorskip("ray")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
    env[RAY_SUITE] = "1"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "ray", "-n", "0", "-q", "-p", "no:cacheprovider",
         str(ROOT / "tests")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1700, check=False)
    report = run.stdout[-20000:] + run.stderr[-5000:]
    assert run.returncode == 0, report
    assert " passed" in run.stdout.splitlines()[-1], report
