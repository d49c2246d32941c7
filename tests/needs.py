"""What a test needs from the machine: a skip on a developer's machine, a failure under CI
(``.ci/run`` installs it, so a missing one there is a broken set-up, not a reason to skip)."""

from __future__ import annotations

import os
import shutil

import pytest

__all__ = ["need_bwrap"]


def need_bwrap() -> str:
    """The path of bubblewrap's ``bwrap``; skips without it, or fails when ``CI`` is set."""
    found = shutil.which("bwrap")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("bubblewrap is not installed, and CI must run this test (.ci/run installs it)")
        pytest.skip("needs bubblewrap (Debian bubblewrap)")
    return found
