"""Detect OpenCode on this machine: binary and version (``opencode --version``), with a TTL cache.

``features.models`` lists the models of the first server a session used in this daemon (its
``GET /config/providers``, read by the driver's first attachment). Login state is ``unknown``: OpenCode keeps credentials per provider, in its data
directory or in provider variables, and says nothing about them without a server.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping

import msgspec
import trio

from protocol.models import Detection, Features

__all__ = ["FEATURES", "HARNESS", "MIN_VERSION", "OpenCodeDetector", "probe"]

HARNESS = "opencode"
MIN_VERSION = "1.18.0"
"""The oldest OpenCode checked against this driver (``permission.asked``, ``/global/event``)."""

FEATURES = Features(steer=False, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp="opencode_config")
DEFAULT_TTL = 300.0
_FLOOR = (1, 18, 0)
_TIMEOUT = 20.0


class OpenCodeDetector:
    """Runs ``--version`` at most once per ``ttl`` seconds; adds the models last seen."""

    def __init__(self, *, binary: str | None = None, env: Mapping[str, str] | None = None,
                 ttl: float = DEFAULT_TTL) -> None:
        self._binary = binary
        self._env = env
        self._ttl = ttl
        self._cached: tuple[float, Detection] | None = None
        self._lock = trio.Lock()
        self.models: list[str] = []

    @property
    def binary(self) -> str | None:
        return self._cached[1].path if self._cached is not None else None

    def invalidate(self) -> None:
        self._cached = None

    async def detect(self) -> Detection:
        async with self._lock:
            now = trio.current_time()
            if self._cached is None or now - self._cached[0] >= self._ttl:
                env = os.environ if self._env is None else self._env
                self._cached = (now, await probe(self._binary, env))
            detection = self._cached[1]
        if self.models and detection.available:
            features = msgspec.structs.replace(detection.features, models=list(self.models))
            return msgspec.structs.replace(detection, features=features)
        return detection


async def probe(binary: str | None, env: Mapping[str, str]) -> Detection:
    """Detect once, uncached; a missing or failing binary is ``available: false``."""
    name = binary or "opencode"
    path = name if os.sep in name else shutil.which(name, path=env.get("PATH"))
    base = Detection(harness=HARNESS, available=False, features=FEATURES, min_version=MIN_VERSION)
    if path is None or not os.access(path, os.X_OK):
        return msgspec.structs.replace(base, reason=f"{name} not found")
    try:
        with trio.fail_after(_TIMEOUT):
            done = await trio.run_process([path, "--version"], capture_stdout=True,
                                          capture_stderr=True, check=False,
                                          stdin=subprocess.DEVNULL, env=dict(env))
    except (OSError, trio.TooSlowError) as exc:
        return msgspec.structs.replace(base, path=path,
                                       reason=f"{path} --version failed: {type(exc).__name__}")
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", done.stdout.decode("utf-8", "replace"))
    if done.returncode != 0 or match is None:
        return msgspec.structs.replace(base, path=path,
                                       reason=f"{path} --version exited {done.returncode}")
    number = tuple(int(part) for part in match.groups())
    version = match.group(0)
    if number < _FLOOR:
        return msgspec.structs.replace(base, path=path, version=version,
                                       reason=f"opencode {version} is older than {MIN_VERSION}")
    return msgspec.structs.replace(base, available=True, path=path, version=version)
