"""Codex detection against stand-in executables (version floor, npm layout, login, models, the
cache), and the real CLI's model catalog where it is installed."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import msgspec
import pytest
import trio

from actors.harness import HarnessRequest
from actors.vendors.codex import FEATURES, MIN_VERSION, CodexDriver
from actors.vendors.codex.detect import (
    _TARGETS,
    ENV_KEYS,
    HARNESS,
    find_binary,
    list_models,
    login_state,
    probe,
)
from actors.vendors.detection import DetectionCache, Detector
from actors.vendors.probe import ProbeFailed, parse_version
from tests.fakes.codex_offline import INSTALL_HINT, codex_binary

CATALOG = ('{"models":[{"slug":"gpt-a","visibility":"list","priority":1},'
           '{"slug":"internal","visibility":"hide"},{"slug":"gpt-b","visibility":"list"}]}')


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _codex(tmp: Path, version: str = "codex-cli 0.171.0", code: int = 0) -> Path:
    # Each run appends a line to `calls`, so a test can count the probes.
    return _script(tmp / "bin" / "codex", f'echo run >> "{tmp}/calls"\n'
                   f'if [ "$1" = debug ]; then echo \'{CATALOG}\'; exit 0; fi\n'
                   f'echo "{version}"\nexit {code}')


def _detector(binary: Path, tmp: Path, ttl: float = 300.0) -> Detector:
    return Detector(HARNESS, probe, binary=str(binary), env={"HOME": str(tmp)}, env_keys=ENV_KEYS,
                    cache=DetectionCache(ttl))


async def test_detects_version_and_features(tmp_path: Path) -> None:
    binary = _codex(tmp_path)
    with trio.fail_after(20):
        found = await probe(None, {"PATH": str(binary.parent), "HOME": str(tmp_path)})
    assert found.available and found.harness == "codex"
    assert (found.path, found.version) == (str(binary), "codex-cli 0.171.0")
    assert found.min_version == MIN_VERSION
    assert found.features == msgspec.structs.replace(FEATURES, models=["gpt-a", "gpt-b"])
    assert found.features.mcp == "codex_config_args" and found.features.steer
    assert found.login == "logged_out" and found.reason is None


@pytest.mark.parametrize(("version", "code"), [("codex-cli 0.99.0", 0), ("garbage", 0),
                                               ("codex-cli 0.171.0", 1)])
async def test_old_unreadable_or_failing_binaries_are_unavailable(
        tmp_path: Path, version: str, code: int) -> None:
    binary = _codex(tmp_path, version, code)
    with trio.fail_after(20):
        found = await probe(str(binary), {"HOME": str(tmp_path)})
    assert not found.available and found.path == str(binary) and found.reason


async def test_missing_binary(tmp_path: Path) -> None:
    found = await probe(None, {"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert not found.available and found.path is None and "not found" in (found.reason or "")


@pytest.mark.skipif((platform.system(), platform.machine()) not in _TARGETS,
                    reason="no npm native-binary layout known for this platform")
def test_npm_launcher_resolves_to_the_native_binary(tmp_path: Path) -> None:
    package = tmp_path / "lib" / "node_modules" / "@openai" / "codex"
    launcher = _script(package / "bin" / "codex.js", "exit 0")
    platform_package, triple = _TARGETS[(platform.system(), platform.machine())]
    native = _script(package / "node_modules" / "@openai" / platform_package / "vendor" / triple
                     / "bin" / "codex", "exit 0")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "codex").symlink_to(launcher)
    assert find_binary(None, str(tmp_path / "bin")) == str(native)
    native.unlink()
    assert find_binary(None, str(tmp_path / "bin")) == str(tmp_path / "bin" / "codex")


def test_login_state_never_needs_the_token(tmp_path: Path) -> None:
    assert login_state({"HOME": str(tmp_path)}) == "logged_out"
    assert login_state({"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-x"}) == "logged_in"
    assert login_state({"HOME": str(tmp_path), "CODEX_API_KEY": "x"}) == "logged_in"
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "auth.json").write_text("{}")
    (home / "auth.json").chmod(0)
    assert login_state({"HOME": str(tmp_path), "CODEX_HOME": str(home)}) == "logged_in"
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "auth.json").write_text("{}")
    assert login_state({"HOME": str(tmp_path)}) == "logged_in"


async def test_a_model_catalog_that_cannot_be_read_leaves_codex_available(tmp_path: Path) -> None:
    binary = _script(tmp_path / "codex", 'echo "codex-cli 0.171.0"')  # prints it for `debug models` too
    with trio.fail_after(20):
        found = await probe(str(binary), {"HOME": str(tmp_path)})
    assert found.available and found.features.models == []
    assert (found.reason or "").startswith("models not listed: codex debug models printed no model catalog")


async def test_the_real_cli_lists_its_models_offline(tmp_path: Path) -> None:
    binary = codex_binary()
    if binary is None:
        pytest.skip(f"Codex is not installed ({INSTALL_HINT})")
    home = tmp_path / "codex-home"
    home.mkdir()
    with trio.fail_after(90):
        models = await list_models(binary, {**os.environ, "CODEX_HOME": str(home)}, timeout=60)
    assert not isinstance(models, ProbeFailed), models
    assert models and all(model and " " not in model for model in models)
    assert len(set(models)) == len(models)


def test_parse_version() -> None:
    assert parse_version("codex-cli 0.171.0") == (0, 171, 0)
    assert parse_version("codex 1.2.3-alpha.4") == (1, 2, 3)
    assert parse_version("codex") is None


async def test_detector_caches_until_invalidated(tmp_path: Path) -> None:
    binary = _codex(tmp_path)
    detector = _detector(binary, tmp_path)
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(detector.detect)
        assert (tmp_path / "calls").read_text().count("run") == 2  # --version, debug models
        binary.unlink()
        assert (await detector.detect()).available
        assert detector.binary == str(binary)
        detector.invalidate()
        assert not (await detector.detect()).available


async def test_zero_ttl_probes_every_time(tmp_path: Path) -> None:
    binary = _codex(tmp_path)
    detector = _detector(binary, tmp_path, ttl=0.0)
    with trio.fail_after(20):
        await detector.detect()
        await detector.detect()
    assert (tmp_path / "calls").read_text().count("run") == 4


async def test_driver_launches_the_detected_binary(tmp_path: Path) -> None:
    binary = _codex(tmp_path)
    driver = CodexDriver(detector=_detector(binary, tmp_path))
    request = HarnessRequest(session_id="s", cwd=str(tmp_path), work_dir=str(tmp_path))
    assert driver.launch(request).argv[0] == "codex"
    with trio.fail_after(20):
        assert (await driver.detect()).available
    assert driver.launch(request).argv[0] == str(binary)
    assert driver.name == "codex" and driver.features == FEATURES
    assert not driver.translator(request).ready
    assert os.path.basename(CodexDriver(binary="/x/codex").launch(request).argv[0]) == "codex"
