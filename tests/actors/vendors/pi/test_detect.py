"""pi detection against scripted stand-ins for the binary (``sys.executable`` scripts)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import trio

from actors.vendors.detection import DetectionCache, Detector
from actors.vendors.pi import MIN_VERSION
from actors.vendors.pi.detect import ENV_KEYS, HARNESS, login_state, probe
from tests.fakes.pi_offline import INSTALL_HINT, PINNED, offline_env, pi_binary, write_home

FAKE_PI = """#!{python}
import json, sys, time
if sys.argv[1:] == ["--version"]:
    time.sleep({version_delay})
    print({version!r})
    sys.exit(0)
assert sys.argv[1:3] == ["--mode", "rpc"] and "--no-session" in sys.argv, sys.argv
time.sleep({models_delay})  # a pi that lists models slowly (providers asked over the network)
for line in sys.stdin:
    ask = json.loads(line)
    if ask["type"] == "get_available_models":
        models = [{{"id": "m1", "provider": "p"}}, {{"id": "m2", "provider": "q", "name": "x"}}]
        print(json.dumps({{"type": "agent_start"}}))
        print(json.dumps({{"id": ask["id"], "type": "response", "command": ask["type"],
                          "success": True, "data": {{"models": models}}}}), flush=True)
"""


def fake_pi(tmp: Path, version: str = "0.73.1", *, version_delay: float = 0,
            models_delay: float = 0) -> str:
    path = tmp / "pi"
    path.write_text(FAKE_PI.format(python=sys.executable, version=version,
                                   version_delay=version_delay, models_delay=models_delay))
    path.chmod(0o755)
    return str(path)


async def test_version_and_models_come_from_pi(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    detection = await probe(fake_pi(tmp_path), env)
    assert (detection.available, detection.version, detection.min_version) == (True, "0.73.1", MIN_VERSION)
    assert detection.features.models == ["p/m1", "q/m2"]
    assert detection.features.steer and detection.features.mcp is None
    assert detection.login == "logged_out" and detection.reason is None


async def test_a_slow_model_list_leaves_pi_available_and_says_why(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    with trio.fail_after(60):
        detection = await probe(fake_pi(tmp_path, models_delay=600), env, models_timeout=3)
    assert (detection.available, detection.version, detection.features.models) == (True, "0.73.1", [])
    assert detection.reason == "models not listed: pi get_available_models did not answer within 3s"


async def test_a_slow_version_probe_is_unavailable_with_the_reason(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    binary = fake_pi(tmp_path, version_delay=600)
    with trio.fail_after(60):
        detection = await probe(binary, env, version_timeout=3)
    assert (detection.available, detection.path) == (False, binary)
    assert detection.reason == f"{binary} --version did not answer within 3s"


async def test_an_old_or_missing_pi_is_unavailable_with_a_reason(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    old = await probe(fake_pi(tmp_path, "0.58.3"), env)
    assert (old.available, old.version) == (False, "0.58.3") and "older" in (old.reason or "")
    missing = await probe(None, {"PATH": str(tmp_path / "nowhere"), "HOME": str(tmp_path)})
    assert (missing.available, missing.reason) == (False, "pi not found")


async def test_detection_is_cached_until_invalidated(tmp_path: Path) -> None:
    binary = fake_pi(tmp_path)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    detector = Detector(HARNESS, probe, binary=binary, env=env, env_keys=ENV_KEYS,
                        cache=DetectionCache(3600))
    first = await detector.detect()
    Path(binary).unlink()
    assert await detector.detect() is first
    assert detector.binary == binary
    detector.invalidate()
    assert (await detector.detect()).available is False
    assert (await Detector(HARNESS, probe, binary=binary, env=env,
                           cache=DetectionCache(0)).detect()).available is False


def test_login_state_reads_keys_and_stored_config_never_values(tmp_path: Path) -> None:
    assert login_state({"HOME": str(tmp_path)}) == "logged_out"
    assert login_state({"HOME": str(tmp_path), "ANTHROPIC_API_KEY": "k"}) == "logged_in"
    home = tmp_path / "agent"
    home.mkdir()
    (home / "models.json").write_text("{}")
    assert login_state({"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(home)}) == "logged_in"


async def test_the_real_pi_reports_its_version_and_configured_models(tmp_path: Path) -> None:
    binary = pi_binary()
    if binary is None:
        pytest.skip(f"pi is not installed ({INSTALL_HINT})")
    write_home(tmp_path / "agent", port=9)  # never contacted: listing models is offline
    env = {**os.environ, **offline_env(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    with trio.fail_after(120):
        detection = await probe(binary, env)
    assert (detection.available, detection.version, detection.reason) == (True, PINNED, None)
    assert detection.features.models == ["fake/fake-model", "fake/fake-other"]
    assert detection.login == "logged_in"


async def test_the_real_pi_with_no_provider_lists_no_models_and_no_failure(tmp_path: Path) -> None:
    binary = pi_binary()
    if binary is None:
        pytest.skip(f"pi is not installed ({INSTALL_HINT})")
    (tmp_path / "agent").mkdir()  # no models.json, no auth.json: `pi --list-models` says
    env = {**os.environ, **offline_env(tmp_path),  # "No models available"
           "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
           **{key: "" for key in ENV_KEYS if key.endswith(("_KEY", "_TOKEN"))}}
    with trio.fail_after(120):
        detection = await probe(binary, env)
    assert (detection.available, detection.version, detection.reason) == (True, PINNED, None)
    assert (detection.features.models, detection.login) == ([], "logged_out")
