"""The ACP models probe against real agents, offline (``tests.fakes.acp_offline``): the models a
new session offers, a missing key as a reason, and no process or directory left behind."""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import trio

from actors.vendors.acp import PROFILES
from actors.vendors.acp.detect import probe
from actors.vendors.options import home_env
from protocol.models import Detection
from tests.fakes.acp_offline import PINNED, binary, install_hint, offline
from tests.fakes.model_server import FakeModels

pytestmark = [pytest.mark.vendor]
TIMEOUT = 150  # the probes get 60 s each: a loaded machine is no failure here
MARK = "CORRAL_MODELS_PROBE_TEST"

EXPECTED = {  # what the pinned agents offer a new session, offline
    "gemini": ["auto", "gemini-2.5-pro"],
    "claude-acp": ["default", "opus", "haiku"],
    "opencode-acp": ["fake/fake-model", "fake/fake-other"],
}


@pytest.fixture
def private_tmp(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "tmp"
    folder.mkdir()
    was = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield folder
    finally:
        tempfile.tempdir = was


def _installed(agent: str) -> str:
    found = binary(agent)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {agent} is not installed ({install_hint(agent)})")
        pytest.skip(f"{agent} is not installed ({install_hint(agent)})")
    return found


def marked() -> list[psutil.Process]:
    """Live processes whose environment carries this test's mark (a probe's descendants too)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and MARK in proc.environ():
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


async def detect(agent: str, tmp: Path, env: dict[str, str], home: Path) -> Detection:
    """Detection of ``agent`` with the daemon-like ``env`` (its home in ``home``), then the
    checks that nothing of the probes is left."""
    profile = PROFILES[agent]
    full = {**os.environ, **env, **home_env(str(home), profile.home_env), MARK: secrets.token_hex(4)}
    with trio.fail_after(TIMEOUT):
        detection = await probe(profile, _installed(agent), full, with_models=True, timeout=60, models_timeout=60)
    assert marked() == []
    assert list((tmp / "tmp").iterdir()) == []
    return detection


@pytest.mark.parametrize("agent", sorted(EXPECTED))
async def test_a_real_agent_lists_the_models_of_a_new_session(agent: str, tmp_path: Path,
                                                              private_tmp: Path) -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(FakeModels().serve)
        env, options = offline(agent, port, tmp_path / "home")
        detection = await detect(agent, tmp_path, env, Path(options["home"]))
        nursery.cancel_scope.cancel()
    assert (detection.available, detection.reason) == (True, None)
    assert PINNED[agent] in (detection.version or "")
    assert set(EXPECTED[agent]) <= set(detection.features.models), detection.features.models


async def test_gemini_without_a_key_is_available_and_says_why_it_lists_no_models(
        tmp_path: Path, private_tmp: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"GEMINI_API_KEY": "", "GOOGLE_API_KEY": "", "GOOGLE_GEMINI_BASE_URL": ""}
    detection = await detect("gemini", tmp_path, env, home)
    assert (detection.available, detection.features.models) == (True, [])
    assert detection.reason == ("models not listed: gemini session/new failed (-32000): "
                                "Gemini API key is missing or not configured.")
