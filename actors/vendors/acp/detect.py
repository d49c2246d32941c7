"""Detect one ACP agent: binary, version, version floor; cached with a TTL.

The version is the first ``x.y.z`` in ``<binary> --version``; when that prints none (the
``version_from_package`` quirk: ``claude-code-acp``), or fails, it is read from the
``package.json`` of the profile's npm package that holds the binary (the npm bin link resolved).
A missing binary, or one below ``profile.min_version``, is ``available: false`` with the reason.
Login state is ``unknown``: ACP agents say so only when a session is opened (``authenticate``).

``features.models`` lists the models the agent offered the last time a session opened in this
daemon (ACP's session models), kept as long as the detection.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import msgspec
import trio

from protocol.models import Detection, Features

from .profiles import Profile

__all__ = ["AcpDetector", "FEATURES", "parse_version", "package_version"]

FEATURES = Features(steer=False, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp="acp_session")
"""What an ACP session can do, statically (the agent may still lack a model list)."""

DEFAULT_TTL = 300.0
_VERSION_TIMEOUT = 20.0


class AcpDetector:
    """Runs detection at most once per ``ttl`` seconds; concurrent callers share one probe."""

    def __init__(self, profile: Profile, *, binary: str | None = None,
                 env: Mapping[str, str] | None = None, ttl: float = DEFAULT_TTL) -> None:
        self._profile = profile
        self._binary = binary
        self._env = env
        self._ttl = ttl
        self._cached: tuple[float, Detection] | None = None
        self._lock = trio.Lock()
        self.models: list[str] = []

    @property
    def binary(self) -> str | None:
        """The binary the last detection found, if any."""
        return self._cached[1].path if self._cached is not None else None

    def invalidate(self) -> None:
        """Forget the cached detection (after an install or a login)."""
        self._cached = None

    async def detect(self) -> Detection:
        """The cached detection, or a fresh probe (runs ``--version``; bounded; cancellable)."""
        async with self._lock:
            now = trio.current_time()
            if self._cached is None or now - self._cached[0] >= self._ttl:
                env = os.environ if self._env is None else self._env
                self._cached = (now, await probe(self._profile, self._binary, env))
            detection = self._cached[1]
        if self.models:
            features = msgspec.structs.replace(detection.features, models=list(self.models))
            return msgspec.structs.replace(detection, features=features)
        return detection


async def probe(profile: Profile, binary: str | None, env: Mapping[str, str]) -> Detection:
    """Detect once, uncached; a missing or failing binary is ``available: false``, not an error."""
    name = binary or profile.binary
    path = name if os.sep in name else shutil.which(name, path=env.get("PATH"))
    base = Detection(harness=profile.name, available=False, features=FEATURES,
                     min_version=profile.min_version)
    if path is None or not os.access(path, os.X_OK):
        return msgspec.structs.replace(base, reason=f"{name} not found")
    version = None if "version_from_package" in profile.quirks else await _run_version(path)
    if version is None and profile.package is not None:
        version = package_version(path, profile.package)
    if version is None:
        return msgspec.structs.replace(base, path=path, reason=f"{path}: no version found")
    number = parse_version(version)
    floor = parse_version(profile.min_version) if profile.min_version else None
    if floor is not None and (number is None or number < floor):
        return msgspec.structs.replace(
            base, path=path, version=version,
            reason=f"{profile.name} {version} is older than {profile.min_version}")
    return msgspec.structs.replace(base, available=True, path=path, version=version)


def parse_version(text: str) -> tuple[int, ...] | None:
    """``"GitHub Copilot CLI 1.0.102."`` → ``(1, 0, 102)``; ``None`` when there is none."""
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(part) for part in match.groups()) if match else None


def package_version(binary: str, package: str) -> str | None:
    """The ``version`` of npm package ``package`` that ships ``binary`` (bin link resolved)."""
    directory = Path(binary).resolve().parent
    for folder in (directory, *directory.parents):
        manifest = folder / "package.json"
        try:
            data = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("name") == package:
            version = data.get("version")
            return version if isinstance(version, str) else None
    return None


async def _run_version(path: str) -> str | None:
    try:
        with trio.fail_after(_VERSION_TIMEOUT):
            done = await trio.run_process([path, "--version"], capture_stdout=True,
                                          capture_stderr=True, check=False,
                                          stdin=subprocess.DEVNULL)
    except (OSError, trio.TooSlowError):
        return None
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        if done.returncode == 0 and parse_version(line) is not None:
            return line.strip()
    return None
