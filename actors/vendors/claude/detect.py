"""Detection of Claude Code on this machine: binary, version, version floor, login state.

``detect`` runs ``<binary> --version`` (bounded by a timeout; cancelling it kills the probe) and
never reads a token: the login state is only whether a key is in the environment or a
credentials file exists in the config home. ``Detector`` caches verdicts for a TTL measured on
the trio clock, because ``harness.list`` may be asked often and a probe spawns a process.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from typing import Literal

import msgspec
import trio

from protocol.models import Detection, Features

__all__ = ["FEATURES", "HARNESS", "MIN_VERSION", "Detector", "detect", "login_state", "parse_version"]

HARNESS = "claude"
MIN_VERSION = "2.1.0"
"""The oldest Claude Code corral drives (its stream-json control protocol was checked on 2.1.197)."""

FEATURES = Features(steer=True, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp="claude_mcp_config")
"""What the Claude driver can do, statically."""

_KEY_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_FLOOR = (2, 1, 0)


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first ``X.Y.Z`` in ``text`` as a comparable tuple."""
    match = _VERSION.search(text)
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def login_state(env: Mapping[str, str], config_dir: str | None = None) -> Literal["logged_in", "logged_out"]:
    """``logged_in`` when a key/provider switch is in ``env`` or a credentials file exists; never reads it."""
    if any(env.get(name) for name in _KEY_ENV):
        return "logged_in"
    home = config_dir or env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME", os.path.expanduser("~")), ".claude")
    return "logged_in" if os.path.exists(os.path.join(home, ".credentials.json")) else "logged_out"


async def detect(binary: str | None = None, *, env: Mapping[str, str] | None = None,
                 timeout: float = 10.0) -> Detection:
    """Probe ``binary`` (else ``claude`` on ``PATH``); a missing or too-old binary is ``available=False``.

    Cancellation: cancelling the caller kills the ``--version`` probe; a probe that outlives
    ``timeout`` is killed and reported as unavailable.
    """
    environ = dict(os.environ if env is None else env)
    path = shutil.which(binary or "claude", path=environ.get("PATH"))
    base = Detection(harness=HARNESS, available=False, features=FEATURES, min_version=MIN_VERSION,
                     login=login_state(environ))
    if path is None:
        return _replace(base, reason=f"{binary or 'claude'} not found on PATH")
    first_line = ""
    with trio.move_on_after(timeout) as scope:
        try:
            probe = await trio.run_process([path, "--version"], capture_stdout=True, capture_stderr=True,
                                           check=False, env=environ)
        except OSError as exc:
            return _replace(base, path=path, reason=f"cannot run {path}: {exc.strerror or exc}")
        lines = probe.stdout.decode("utf-8", "replace").strip().splitlines()
        first_line = lines[0].strip() if lines else ""
        if probe.returncode != 0:
            return _replace(base, path=path, reason=f"{path} --version exited with {probe.returncode}")
    if scope.cancelled_caught:
        return _replace(base, path=path, reason=f"{path} --version did not answer within {timeout:g}s")
    version = parse_version(first_line)
    if version is None:
        return _replace(base, path=path, version=first_line or None,
                        reason=f"cannot read a version from {first_line!r}")
    if version < _FLOOR:
        return _replace(base, path=path, version=first_line,
                        reason=f"Claude Code {'.'.join(map(str, version))} is older than {MIN_VERSION}")
    return _replace(base, path=path, version=first_line, available=True)


class Detector:
    """``detect`` with a per-binary cache of ``ttl`` seconds (trio clock); ``invalidate`` drops it."""

    def __init__(self, binary: str | None = None, *, ttl: float = 60.0, timeout: float = 10.0) -> None:
        self.binary = binary
        self.ttl = ttl
        self.timeout = timeout
        self._cached: tuple[float, Detection] | None = None

    async def detect(self) -> Detection:
        """The cached verdict while fresh, else a new probe (see ``detect`` for cancellation)."""
        now = trio.current_time()
        if self._cached is not None and now < self._cached[0]:
            return self._cached[1]
        verdict = await detect(self.binary, timeout=self.timeout)
        self._cached = (trio.current_time() + self.ttl, verdict)
        return verdict

    def invalidate(self) -> None:
        """Forget the cached verdict (after an install, a login or a logout)."""
        self._cached = None


def _replace(detection: Detection, **changes: object) -> Detection:
    return msgspec.structs.replace(detection, **changes)
