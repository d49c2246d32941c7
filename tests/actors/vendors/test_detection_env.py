"""Detection sees what a harness's sessions see: the daemon's environment with the harness's
``[harness.<name>] env``, its ``home`` and the vendor's fixed env laid over it, and a verdict
per configured env.

The stand-in CLI (a ``/bin/sh`` script) prints a version only when ``CORRAL_TEST_GATE`` is
``open``; it is found only through the ``PATH`` the configuration gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from actors.app import Config
from actors.harnesses import drivers
from actors.harness import HarnessRequest
from actors.session.config import harness_defaults
from actors.vendors.acp import AcpDriver
from actors.vendors.codex import CodexDriver
from actors.vendors.detection import DetectionCache, Detector
from protocol.models import Detection
from supervisor import config as loader

GATE = "CORRAL_TEST_GATE"


def _gated_cli(directory: Path, name: str) -> Path:
    """``name`` in ``directory``: ``--version`` says ``999.0.0`` if the gate is open, else fails."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f'#!/bin/sh\nif [ "${GATE}" != open ]; then echo "the gate is shut" >&2; exit 3; fi\n'
                    'if [ "$1" = --version ]; then echo "999.0.0"; fi\nexit 0\n')
    path.chmod(0o755)
    return path


def _configured(harness: str, env: dict[str, str]) -> Config:
    text = f"[harness.{json.dumps(harness)}.env]\n" + "".join(
        f"{name} = {json.dumps(value)}\n" for name, value in env.items())
    return loader.parse_config(Config, text, source="<test>").config


@pytest.mark.parametrize(("harness", "binary"), [
    ("claude", "claude"), ("codex", "codex"), ("pi", "pi"), ("opencode", "opencode"),
    ("gemini", "gemini")])
async def test_harness_list_detection_sees_the_harness_env_of_the_config(
        tmp_path: Path, harness: str, binary: str) -> None:
    cli = _gated_cli(tmp_path / "bin", binary)
    driver = drivers(_configured(harness, {"PATH": str(cli.parent), GATE: "open"}))[harness]
    with trio.fail_after(60):
        found: Detection = await driver.detect()
    assert (found.available, found.path, found.version) == (True, str(cli), "999.0.0"), found.reason
    closed = drivers(_configured(harness, {"PATH": str(cli.parent), GATE: "shut"}))[harness]
    with trio.fail_after(60):
        refused: Detection = await closed.detect()
    assert (refused.available, refused.path) == (False, str(cli))
    assert "exited" in (refused.reason or "")


async def test_a_login_key_in_the_harness_env_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    cli = _gated_cli(tmp_path / "bin", "codex")
    home = tmp_path / "codex-home"
    home.mkdir()
    env = {GATE: "open", "CODEX_HOME": str(home)}
    cache = DetectionCache()  # shared, as in the daemon: the key is part of the cache key
    with trio.fail_after(60):
        without = await CodexDriver(binary=str(cli), env=env, cache=cache).detect()
        found = await CodexDriver(binary=str(cli), env={**env, "OPENAI_API_KEY": "sk-configured"},
                                  cache=cache).detect()
    assert (without.available, without.login) == (True, "logged_out")
    assert (found.available, found.login) == (True, "logged_in")


async def test_a_change_of_the_configured_env_gives_a_fresh_verdict(tmp_path: Path) -> None:
    calls: list[str | None] = []

    async def probe(binary: str | None, env: object) -> Detection:
        calls.append(getattr(env, "get")("HTTPS_PROXY"))
        return Detection(harness="x", available=True)

    cache = DetectionCache()
    for proxy in ("http://a", "http://a", "http://b"):
        await Detector("x", probe, overlay={"HTTPS_PROXY": proxy}, cache=cache).detect()
    await Detector("x", probe, cache=cache).detect()
    # HTTPS_PROXY is no variable the vendor keys on: the configured env counts all the same.
    assert calls[:2] == ["http://a", "http://b"] and len(calls) == 3


def _env_printing_cli(directory: Path, name: str, out: Path) -> Path:
    """``name`` in ``directory``: ``--version`` writes its whole environment to ``out`` (NUL
    separated, as ``/proc/self/environ``) and says ``999.0.0``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then /usr/bin/env -0 > "{out}"; echo "999.0.0"; fi\nexit 0\n')
    path.chmod(0o755)
    return path


def _home_configured(harness: str, home: Path, env: dict[str, str]) -> Config:
    text = (f"[harness.{json.dumps(harness)}]\nhome = {json.dumps(str(home))}\n"
            f"[harness.{json.dumps(harness)}.env]\n"
            + "".join(f"{name} = {json.dumps(value)}\n" for name, value in env.items()))
    return loader.parse_config(Config, text, source="<test>").config


@pytest.mark.parametrize(("harness", "binary"), [
    ("claude", "claude"), ("codex", "codex"), ("pi", "pi"), ("opencode", "opencode"),
    ("gemini", "gemini"), ("copilot", "copilot"), ("opencode-acp", "opencode"), ("cursor", "cursor-agent")])
async def test_the_version_probe_runs_with_the_home_and_fixed_env_a_session_child_gets(
        tmp_path: Path, harness: str, binary: str) -> None:
    out = tmp_path / "probe-env"
    cli = _env_printing_cli(tmp_path / "bin", binary, out)
    home = tmp_path / "home"
    config = _home_configured(harness, home, {"PATH": str(cli.parent)})
    driver = drivers(config)[harness]
    with trio.fail_after(60):
        found: Detection = await driver.detect()
    assert (found.available, found.path, found.version) == (True, str(cli), "999.0.0"), found.reason
    seen = dict(line.split("=", 1) for line in out.read_text().split("\0") if line)
    # What a session of this harness gets from the configuration alone, at spawn.
    options, env = harness_defaults(config, harness)
    request = HarnessRequest(session_id="s", cwd=str(tmp_path), work_dir=str(tmp_path),
                             options=options, env=env)
    launch = driver.launch(request)
    if isinstance(driver, AcpDriver):  # the permission mode's env is the session's, not the CLI's
        modal = {name for by_mode in driver.profile.mode_env.values() for name in by_mode}
        launch_env = {k: v for k, v in launch.env.items() if k not in modal}
    else:
        launch_env = dict(launch.env)
    assert any(value.startswith(str(home)) for value in launch_env.values())  # the home is there
    assert {name: seen.get(name) for name in launch_env} == launch_env
