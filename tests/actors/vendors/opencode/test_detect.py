"""OpenCode detection against scripted stand-ins for the binary (``sys.executable`` scripts)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from actors.vendors.detection import DetectionCache, Detector
from actors.vendors.opencode.detect import ENV_KEYS, HARNESS, MIN_VERSION, probe


def fake_opencode(tmp: Path, version: str) -> str:
    path = tmp / "opencode"
    path.write_text(f"#!{sys.executable}\nprint({version!r})\n")
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


async def test_models_seen_by_a_session_join_the_cached_detection(tmp_path: Path) -> None:
    detector = Detector(HARNESS, probe, binary=fake_opencode(tmp_path, "1.18.33"),
                        env={"PATH": os.environ["PATH"]}, env_keys=ENV_KEYS, cache=DetectionCache(3600))
    assert (await detector.detect()).features.models == []
    detector.models = ["p/m"]
    assert (await detector.detect()).features.models == ["p/m"]
