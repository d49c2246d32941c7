"""ACP detection: absent binaries, version floors, versions read from npm's package.json, the
TTL cache and the models a live session offered."""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

import msgspec
import trio
import trio.testing

from actors.vendors.acp import PROFILES, AcpDriver
from actors.vendors.acp.detect import ENV_KEYS, probe
from actors.vendors.acp.profiles import Profile
from actors.vendors.detection import Detector
from actors.vendors.probe import package_version, parse_version


def detector(profile: Profile, *, binary: str | None = None,
             env: dict[str, str] | None = None) -> Detector:
    """The detector an ``AcpDriver`` of ``profile`` holds, with a private cache."""
    return Detector(profile.name, functools.partial(probe, profile), binary=binary, env=env,
                    env_keys=ENV_KEYS)


def script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(0o755)
    return path


async def test_an_absent_binary_is_unavailable(tmp_path: Path) -> None:
    grok = detector(PROFILES["grok"], env={"PATH": str(tmp_path)})
    detection = await grok.detect()
    assert (detection.harness, detection.available, detection.reason) == (
        "grok", False, "grok not found")


async def test_a_version_below_the_floor_is_unavailable_with_the_reason(tmp_path: Path) -> None:
    old = script(tmp_path / "gemini", "print('0.50.2')")
    detection = await detector(PROFILES["gemini"], binary=str(old)).detect()
    assert (detection.available, detection.version) == (False, "0.50.2")
    assert detection.reason == "gemini 0.50.2 is older than 0.61.0"
    new = script(tmp_path / "copilot", "print('GitHub Copilot CLI 1.0.102.')")
    detection = await detector(PROFILES["copilot"], binary=str(new)).detect()
    assert (detection.available, detection.version, detection.path) == (
        True, "GitHub Copilot CLI 1.0.102.", str(new))


async def test_claude_acp_takes_its_version_from_the_package(tmp_path: Path) -> None:
    package = tmp_path / "lib" / "node_modules" / "@zed-industries" / "claude-code-acp"
    (package / "dist").mkdir(parents=True)
    (package / "package.json").write_text(json.dumps(
        {"name": "@zed-industries/claude-code-acp", "version": "0.16.2"}))
    entry = script(package / "dist" / "index.js", "")  # prints nothing for --version
    link = tmp_path / "claude-code-acp"
    link.symlink_to(entry)
    assert package_version(str(link), "@zed-industries/claude-code-acp") == "0.16.2"
    assert package_version(str(link), "other") is None
    env = {"PATH": f"{tmp_path}{os.pathsep}/usr/bin"}
    detection = await detector(PROFILES["claude-acp"], env=env).detect()
    assert (detection.available, detection.version, detection.path) == (True, "0.16.2", str(link))


async def test_a_binary_from_its_npm_package_reports_the_packages_version(tmp_path: Path) -> None:
    # Copilot's --version line is "GitHub Copilot CLI 1.0.102."; harness.list says 1.0.102.
    package = tmp_path / "lib" / "node_modules" / "@github" / "copilot"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "@github/copilot", "version": "1.0.102"}))
    entry = script(package / "index.js", "print('GitHub Copilot CLI 1.0.102.')")
    link = tmp_path / "copilot"
    link.symlink_to(entry)
    detection = await detector(PROFILES["copilot"], binary=str(link)).detect()
    assert (detection.available, detection.version, detection.path) == (True, "1.0.102", str(link))


async def test_detection_is_cached_and_lists_the_models_a_session_offered(
        tmp_path: Path, mock_clock: trio.testing.MockClock) -> None:
    counter = tmp_path / "count"
    binary = script(tmp_path / "copilot",  # answers --version and anything else alike: no ACP
                    f"open({str(counter)!r}, 'a').write('x')\nprint('1.0.102')")
    driver = AcpDriver(PROFILES["copilot"], binary=str(binary))
    plain = await driver.detect()  # harness.list: --version only, no session opened
    assert (plain.available, plain.reason, counter.read_text()) == (True, None, "x")
    first = await driver.detect(models=True)
    assert first.reason == "models not listed: copilot session/new exited (status 0) without answering"
    mock_clock.jump(100)
    assert await driver.detect() == first and counter.read_text() == "xxx"  # --version, then both
    driver.detector.models = ["gpt-4.1", "gpt-5"]
    learned = await driver.detect()
    assert learned.features == msgspec.structs.replace(first.features, models=["gpt-4.1", "gpt-5"])
    assert learned.reason is None
    mock_clock.jump(300)
    await driver.detect(models=True)
    assert counter.read_text() == "xxxxx"


def test_parse_version() -> None:
    assert parse_version("GitHub Copilot CLI 1.0.102.") == (1, 0, 102)
    assert parse_version("0.61.0") == (0, 61, 0)
    assert parse_version("nightly") is None
