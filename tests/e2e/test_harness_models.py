"""``corral harnesses --models`` through a real daemon (``corral start``), offline: the models
OpenCode (``opencode models``), ``opencode acp`` and Gemini (ACP ``session/new``) and pi
(``get_available_models``) offer, each in the daemon's own environment — an isolated home whose
configs name the fake model server (``tests.fakes``). The daemon's ``PATH`` holds only these
CLIs and ``node``: the other vendors are "not found" and add no load."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import trio

from tests.daemonconfig import without_prewarm
from tests.fakes import opencode_offline, pi_offline
from tests.fakes.acp_offline import offline

pytestmark = [pytest.mark.vendor]

REPO = Path(__file__).resolve().parents[2]
LIMIT = 120
CLIS = ("opencode", "pi", "gemini", "node", "git")
FAKE = ["fake/fake-model", "fake/fake-other"]


@pytest.fixture
def short_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hm-", dir="/tmp"))  # the daemon's socket path is short
    try:
        yield path
    finally:
        subprocess.run([sys.executable, "-m", "actors.app", "stop", "--state-dir",
                        str(path / "state")], env=_env({}), cwd=str(REPO), capture_output=True,
                       timeout=LIMIT, check=False)  # a daemon a failed test left running
        shutil.rmtree(path, ignore_errors=True)


def _env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CORRAL_STATE_DIR"}
    env.update(PYTHONPATH=str(REPO), NO_COLOR="1", **extra)
    return env


async def corral(*args: str, env: Mapping[str, str]) -> str:
    done = await trio.run_process([sys.executable, "-m", "actors.app", *args], check=False,
                                  capture_stdout=True, capture_stderr=True, env=_env(env),
                                  cwd=str(REPO))
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def daemon_env(root: Path) -> dict[str, str]:
    """The isolated home: OpenCode's config with the fake provider, pi's ``models.json``, a
    Gemini key and base URL; ``PATH`` holds only ``CLIS``."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for name in CLIS:
        found = shutil.which(name)
        if found is None:
            if os.environ.get("CI"):
                pytest.fail(f"CI is set but {name} is not installed")
            pytest.skip(f"{name} is not installed")
        (bin_dir / name).symlink_to(found)
    env = opencode_offline.offline_env(root)  # HOME is root/home
    config = Path(env["XDG_CONFIG_HOME"]) / "opencode"
    config.mkdir(parents=True)
    # The providers name the fake server's address; listing models never contacts it.
    (config / "opencode.json").write_text(json.dumps(opencode_offline.provider_config(port=9)))
    pi_offline.write_home(root / "pi", port=9)
    gemini, _ = offline("gemini", 9, Path(env["HOME"]))  # its settings in HOME/.gemini
    return {**env, **pi_offline.offline_env(root), **gemini, "PI_CODING_AGENT_DIR": str(root / "pi"),
            "PATH": str(bin_dir)}


async def test_corral_harnesses_models_lists_what_each_cli_offers(short_dir: Path) -> None:
    env = daemon_env(short_dir)
    state = str(short_dir / "state")
    with trio.fail_after(LIMIT):
        # OpenCode's first run creates its database; several first runs at once (the daemon
        # probes opencode and opencode-acp together) may fail with "database is locked".
        await trio.run_process([str(short_dir / "bin" / "opencode"), "models"], env=_env(env),
                               capture_stdout=True, capture_stderr=True)
        await corral("start", "--state-dir", state, "--port", "0", "--config",
                     without_prewarm(short_dir / "config"), env=env)
        try:
            table = await corral("harnesses", "--models", "--state-dir", state, env=env)
        finally:
            await corral("stop", "--state-dir", state, env=env)
    rows = {cells[0]: cells for cells in (re.split(r"\s{2,}", line) for line in table.splitlines())}
    assert rows["HARNESS"] == ["HARNESS", "AVAILABLE", "VERSION", "LOGIN / KEYS", "PATH / REASON",
                               "MODELS"]
    for name in ("opencode", "opencode-acp", "pi"):
        assert rows[name][1] == "yes", rows[name]
        listed = rows[name][5].split(", ")
        assert set(FAKE) <= set(listed), rows[name]
    assert rows["gemini"][1] == "yes" and "gemini-2.5-pro" in rows["gemini"][5].split(", ")
    assert rows["claude"][1:] == ["no", "-", "-", "claude not found", "-"]
