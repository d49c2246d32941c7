"""OpenCode detection against scripted stand-ins for the binary (``sys.executable`` scripts)
and against the real CLI in an isolated home whose config names the fake model server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import trio

from actors.vendors.detection import DetectionCache, Detector
from actors.vendors.opencode.detect import ENV_KEYS, HARNESS, MIN_VERSION, probe
from tests.fakes.opencode_offline import (INSTALL_HINT, MODEL, PINNED, offline_env,
                                          opencode_binary, provider_config)

FAKE_OPENCODE = """#!{python}
import os, sys, time
if sys.argv[1:] == ["--version"]:
    print({version!r})
    sys.exit(0)
assert sys.argv[1:] == ["models"] and os.getcwd() == "/", (sys.argv, os.getcwd())
time.sleep({models_delay})
sys.stdout.write({listing!r})
if os.environ.get("FAKE_FAIL"):
    sys.stderr.write("Error: Unexpected error\\n\\ndatabase is locked " + os.environ["MY_API_KEY"] + "\\n")
    sys.exit(1)
"""


def fake_opencode(tmp: Path, version: str = "1.18.33", *, listing: str = "p/m1\nq/m-2\n",
                  models_delay: float = 0) -> str:
    path = tmp / "opencode"
    path.write_text(FAKE_OPENCODE.format(python=sys.executable, version=version, listing=listing,
                                         models_delay=models_delay))
    path.chmod(0o755)
    return str(path)


async def test_version_floor_and_missing_binary(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"]}
    found = await probe(fake_opencode(tmp_path, "1.18.33"), env)
    assert (found.available, found.version, found.min_version) == (True, "1.18.33", MIN_VERSION)
    assert found.features.mcp == "opencode_config" and not found.features.steer
    old = await probe(fake_opencode(tmp_path, "0.9.1"), env)
    assert (old.available, old.version) == (False, "0.9.1") and "older" in (old.reason or "")
    missing = await probe(None, {"PATH": str(tmp_path / "none")})
    assert (missing.available, missing.reason) == (False, "opencode not found")


async def test_models_come_from_opencode_models(tmp_path: Path) -> None:
    found = await probe(fake_opencode(tmp_path), {"PATH": os.environ["PATH"]}, with_models=True)
    assert (found.available, found.features.models, found.reason) == (True, ["p/m1", "q/m-2"], None)
    plain = await probe(fake_opencode(tmp_path), {"PATH": os.environ["PATH"]})  # not asked: not run
    assert (plain.available, plain.features.models) == (True, [])


async def test_a_slow_or_odd_model_list_leaves_opencode_available_and_says_why(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"]}
    with trio.fail_after(60):
        slow = await probe(fake_opencode(tmp_path, models_delay=600), env, with_models=True, models_timeout=3)
    assert (slow.available, slow.features.models) == (True, [])
    assert slow.reason == "models not listed: opencode models did not answer within 3s"
    odd = await probe(fake_opencode(tmp_path, listing="p/m1\nWarning: something\n"), env, with_models=True)
    assert (odd.available, odd.features.models) == (True, [])
    assert odd.reason == "models not listed: opencode models printed 'Warning: something', " \
                         "not provider/model"


async def test_a_failed_model_list_quotes_the_clis_last_words_masking_keys(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "FAKE_FAIL": "1", "MY_API_KEY": "sk-secret-value"}
    failed = await probe(fake_opencode(tmp_path, listing=""), env, with_models=True)
    assert (failed.available, failed.features.models) == (True, [])
    assert failed.reason == "models not listed: opencode models exited with 1: database is locked ***"


async def test_models_seen_by_a_session_fill_in_when_the_cli_listed_none(tmp_path: Path) -> None:
    detector = Detector(HARNESS, probe, binary=fake_opencode(tmp_path, listing=""),
                        env={"PATH": os.environ["PATH"]}, env_keys=ENV_KEYS, cache=DetectionCache(3600))
    assert (await detector.detect()).features.models == []
    detector.models = ["p/m"]
    assert (await detector.detect()).features.models == ["p/m"]


@pytest.mark.vendor
async def test_the_real_opencode_lists_the_models_its_config_names(tmp_path: Path) -> None:
    binary = opencode_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but opencode is not installed ({INSTALL_HINT})")
        pytest.skip(f"opencode is not installed ({INSTALL_HINT})")
    env = {**os.environ, **offline_env(tmp_path)}
    config = Path(env["XDG_CONFIG_HOME"]) / "opencode"
    config.mkdir(parents=True)
    # The provider names the fake model server's address; listing models never contacts it.
    (config / "opencode.json").write_text(json.dumps(provider_config(port=9)))
    with trio.fail_after(150):  # generous probe timeouts: a loaded machine is no failure here
        detection = await probe(binary, env, with_models=True, version_timeout=60, models_timeout=60)
    assert (detection.available, detection.version, detection.reason) == (True, PINNED, None)
    assert MODEL in detection.features.models and "fake/fake-other" in detection.features.models
    assert all("/" in model for model in detection.features.models)
