"""Detect Codex on this machine: binary, version, version floor, login state; cached with a TTL.

The npm package installs a Node launcher (``bin/codex.js``) on ``PATH`` that spawns the native
binary shipped inside the platform package and stays resident beside it. ``find_binary``
prefers that native binary (``…/@openai/codex-<platform>/vendor/<target>/bin/codex``) so a
session's child is the agent itself; a plain ``codex`` executable on ``PATH`` is used as it is.

Login state is best effort and never reads a secret: ``logged_in`` when ``OPENAI_API_KEY`` or
``CODEX_API_KEY`` is set, or ``$CODEX_HOME/auth.json`` (default ``~/.codex``) exists.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec
import trio

from protocol.models import Detection, Features

HARNESS = "codex"
MIN_VERSION = "0.153.0"
"""The oldest Codex whose app-server speaks the v2 thread/turn API we drive (steer included)."""

FEATURES = Features(steer=True, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp="codex_config_args")
"""What a Codex session can do, statically."""

DEFAULT_TTL = 300.0
"""Seconds a detection answers from cache."""

_FLOOR = (0, 153, 0)
_VERSION_TIMEOUT = 15.0
_TARGETS = {
    ("Linux", "x86_64"): ("codex-linux-x64", "x86_64-unknown-linux-musl"),
    ("Linux", "aarch64"): ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
    ("Darwin", "x86_64"): ("codex-darwin-x64", "x86_64-apple-darwin"),
    ("Darwin", "arm64"): ("codex-darwin-arm64", "aarch64-apple-darwin"),
}


class CodexDetector:
    """Runs detection at most once per ``ttl`` seconds; concurrent callers share one probe."""

    def __init__(self, *, binary: str | None = None, env: Mapping[str, str] | None = None,
                 ttl: float = DEFAULT_TTL) -> None:
        self._binary = binary
        self._env = env
        self._ttl = ttl
        self._cached: tuple[float, Detection] | None = None
        self._lock = trio.Lock()

    @property
    def binary(self) -> str | None:
        """The binary the last detection found, if any."""
        return self._cached[1].path if self._cached is not None else None

    def invalidate(self) -> None:
        """Forget the cached detection (after an install, a login or a logout)."""
        self._cached = None

    async def detect(self) -> Detection:
        """The cached detection, or a fresh probe (runs ``--version``; bounded; cancellable)."""
        async with self._lock:
            now = trio.current_time()
            if self._cached is not None and now - self._cached[0] < self._ttl:
                return self._cached[1]
            detection = await probe(self._binary, os.environ if self._env is None else self._env)
            self._cached = (trio.current_time(), detection)
            return detection


async def probe(binary: str | None, env: Mapping[str, str]) -> Detection:
    """Detect once, uncached; a missing or failing binary is ``available: false``, not an error."""
    path = find_binary(binary, env.get("PATH"))
    base = Detection(harness=HARNESS, available=False, features=FEATURES,
                     min_version=MIN_VERSION, login=login_state(env))
    if path is None:
        return _replace(base, reason=f"{binary or 'codex'} not found")
    try:
        with trio.fail_after(_VERSION_TIMEOUT):
            done = await trio.run_process([path, "--version"], capture_stdout=True,
                                          capture_stderr=True, check=False,
                                          stdin=subprocess.DEVNULL)
    except (OSError, trio.TooSlowError) as exc:
        return _replace(base, path=path, reason=f"{path} --version failed: {type(exc).__name__}")
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    version = lines[0].strip() if lines else None
    if done.returncode != 0 or version is None:
        return _replace(base, path=path, version=version,
                        reason=f"{path} --version exited with {done.returncode}")
    number = parse_version(version)
    if number is None or number < _FLOOR:
        return _replace(base, path=path, version=version,
                        reason=f"codex {version!r} is older than {MIN_VERSION} or unreadable")
    return _replace(base, available=True, path=path, version=version)


def find_binary(binary: str | None, search_path: str | None) -> str | None:
    """The executable: ``binary`` as given or found on PATH, preferring npm's native binary."""
    name = binary or "codex"
    found = name if os.sep in name else shutil.which(name, path=search_path)
    if found is None or not os.access(found, os.X_OK):
        return None
    real = Path(found).resolve()
    if real.suffix != ".js":
        return found
    native = _native_beside(real.parent.parent)
    return str(native) if native is not None else found


def parse_version(text: str) -> tuple[int, ...] | None:
    """``"codex-cli 0.171.0"`` → ``(0, 171, 0)``; ``None`` when no version number is in it."""
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(part) for part in match.groups()) if match else None


def login_state(env: Mapping[str, str]) -> Literal["logged_in", "logged_out"]:
    """``logged_in`` when an API key is in ``env`` or Codex's ``auth.json`` exists (unread)."""
    if env.get("OPENAI_API_KEY") or env.get("CODEX_API_KEY"):
        return "logged_in"
    home = env.get("CODEX_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".codex")
    return "logged_in" if os.path.exists(os.path.join(home, "auth.json")) else "logged_out"


def _native_beside(package: Path) -> Path | None:
    target = _TARGETS.get((platform.system(), platform.machine()))
    if target is None:
        return None
    platform_package, triple = target
    for root in (package / "node_modules" / "@openai" / platform_package, package):
        candidate = root / "vendor" / triple / "bin" / "codex"
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def _replace(detection: Detection, **changes: object) -> Detection:
    return msgspec.structs.replace(detection, **changes)
