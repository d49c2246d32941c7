"""Claude detection: binary lookup, version floor, login state, models and the verdict cache. The
binaries are small shell scripts standing in for ``claude --version``; the models come from the
real CLI where it is installed."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest
import trio

from actors.vendors.claude import ClaudeDriver
from actors.vendors.claude.detect import FEATURES, MIN_VERSION, list_models, login_state, probe
from actors.vendors.detection import DetectionCache
from actors.vendors.probe import parse_version
from tests.fakes.claude_offline import INSTALL_HINT, claude_binary

ANSWERS_INITIALIZE = """
case "$1" in
  --version) echo "2.1.197 (Claude Code)";;
  *) read line; echo 'a warning on stdout'; echo '{"type":"system","subtype":"noise"}'
     echo '{"type":"control_response","response":{"subtype":"success","request_id":"corral-models",'\
'"response":{"models":[{"value":"default"},{"value":"sonnet"},{"value":"opus[1m]"}]}}}';;
esac"""


def fake_claude(tmp_path: Path, body: str, name: str = "claude") -> Path:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PATH": str(tmp_path), "HOME": str(tmp_path / "home"), **extra}


def test_versions_read() -> None:
    assert parse_version(MIN_VERSION) == (2, 1, 0)
    assert parse_version("2.1.197 (Claude Code)") == (2, 1, 197)
    assert parse_version("Claude Code") is None


async def test_a_current_binary_on_path_is_available_with_its_models(tmp_path: Path) -> None:
    binary = fake_claude(tmp_path, ANSWERS_INITIALIZE)
    with trio.fail_after(30):
        found = await probe(None, env(tmp_path, ANTHROPIC_API_KEY="k"))
    assert found.available and found.reason is None
    assert (found.harness, found.path, found.version) == ("claude", str(binary), "2.1.197 (Claude Code)")
    assert (found.min_version, found.login) == (MIN_VERSION, "logged_in")
    assert found.features == msgspec.structs.replace(FEATURES, models=["sonnet", "opus[1m]"])
    assert FEATURES.mcp == "claude_mcp_config" and FEATURES.steer and FEATURES.set_model


async def test_models_that_cannot_be_listed_leave_claude_available_with_the_reason(tmp_path: Path) -> None:
    fake_claude(tmp_path, 'echo "2.1.197 (Claude Code)"; echo second line')
    with trio.fail_after(30):
        found = await probe(None, env(tmp_path))
    assert found.available and found.features.models == []
    assert (found.reason or "").startswith("models not listed: claude initialize")


async def test_the_real_cli_lists_its_models_offline(tmp_path: Path) -> None:
    binary = claude_binary()
    if binary is None:
        pytest.skip(f"Claude Code is not installed ({INSTALL_HINT})")
    home = tmp_path / "home"
    home.mkdir()
    with trio.fail_after(90):
        models = await list_models(binary, {**os.environ, "HOME": str(home),
                                            "CLAUDE_CONFIG_DIR": str(home / ".claude")}, timeout=60)
    assert isinstance(models, list), models
    assert "sonnet" in models and "haiku" in models and "default" not in models


async def test_an_explicit_binary_wins_over_path(tmp_path: Path) -> None:
    fake_claude(tmp_path, 'echo "2.1.197 (Claude Code)"')
    other = fake_claude(tmp_path, 'echo "2.2.0 (Claude Code)"', name="claude-next")
    with trio.fail_after(30):
        found = await probe(str(other), env(tmp_path))
    assert found.available and found.version == "2.2.0 (Claude Code)"


@pytest.mark.parametrize(("body", "reason"), [
    ('echo "1.0.128 (Claude Code)"', "older than 2.1.0"),
    ("echo garbage", "cannot read a version"),
    ("exit 3", "exited (status 3)"),
])
async def test_unusable_binaries_are_unavailable_with_a_reason(tmp_path: Path, body: str, reason: str) -> None:
    fake_claude(tmp_path, body)
    with trio.fail_after(30):
        found = await probe(None, env(tmp_path))
    assert not found.available and reason in (found.reason or "")


async def test_a_missing_binary_is_unavailable(tmp_path: Path) -> None:
    found = await probe(None, env(tmp_path))
    assert not found.available and found.path is None and "not found" in (found.reason or "")


async def test_a_probe_that_hangs_is_killed_at_the_timeout(tmp_path: Path) -> None:
    fake_claude(tmp_path, "exec /bin/sleep 60")
    with trio.fail_after(30):
        found = await probe(None, env(tmp_path), version_timeout=0.5)
    assert not found.available and found.reason == f"{tmp_path}/claude --version did not answer within 0.5s"


def test_login_state_never_needs_the_token(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert login_state({"HOME": str(home)}) == "logged_out"
    assert login_state({"HOME": str(home), "ANTHROPIC_API_KEY": "x"}) == "logged_in"
    assert login_state({"HOME": str(home), "CLAUDE_CODE_USE_BEDROCK": "1"}) == "logged_in"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text("{}")
    assert login_state({"HOME": str(home)}) == "logged_in"
    assert login_state({"HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "iso")}) == "logged_out"


async def test_the_detector_caches_until_invalidated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    binary = fake_claude(tmp_path, f'echo run >> "{runs}"; echo "2.1.197 (Claude Code)"')
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    detector = ClaudeDriver(binary=str(binary), cache=DetectionCache(ttl=3600)).detector
    with trio.fail_after(30):
        first = await detector.detect()
        second = await detector.detect()
        assert first is second and runs.read_text().count("run") == 2  # --version, models
        detector.invalidate()
        await detector.detect()
        assert runs.read_text().count("run") == 4
        assert (await ClaudeDriver(binary=str(binary), cache=DetectionCache(ttl=0)).detect()).available
        assert runs.read_text().count("run") == 6


async def test_the_driver_detects_through_its_detector(tmp_path: Path) -> None:
    binary = fake_claude(tmp_path, 'echo "2.1.197 (Claude Code)"')
    driver = ClaudeDriver(binary=str(binary))
    with trio.fail_after(30):
        found = await driver.detect()
    assert found.available and found.features == driver.features
