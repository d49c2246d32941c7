"""Detect OpenCode on this machine: binary, version and models, each a bounded probe.

``opencode --version`` gives the version; ``opencode models`` the models (one
``provider/model`` per line: the providers of the user's config, its login store and
OpenCode's own catalogue, the names a session's ``model`` takes). Both run at once, as
supervised, group-killed children (``actors.vendors.probe``) with the daemon's environment —
what a session's server sees before its own ``env`` and ``options`` — in ``/``, so no
project's ``opencode.json`` leaks into the harness-wide list. A models probe that fails or is
slow leaves OpenCode available and says why in ``reason``; the models of the first server a
session used (``Detector.models``, from its ``GET /config/providers``) fill in then. OpenCode
1.18.33's very first run on a data directory creates its database, and several first runs at
once may fail with "database is locked" (measured): the reason says so, the next probe lists.
``actors.vendors.detection`` caches the verdict. Login state is ``unknown``: OpenCode keeps
credentials per provider, in its data directory or in provider variables.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from actors.vendors.detection import find_binary, probe_cli
from actors.vendors.probe import ProbeFailed, run_probe
from protocol.models import Detection, Features

__all__ = ["ENV_KEYS", "FEATURES", "HARNESS", "MIN_VERSION", "list_models", "probe"]

HARNESS = "opencode"
MIN_VERSION = "1.18.0"
"""The oldest OpenCode checked against this driver (``permission.asked``, ``/global/event``)."""

FEATURES = Features(steer=False, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp="opencode_config")
ENV_KEYS = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "OPENCODE_CONFIG",
            "OPENCODE_CONFIG_CONTENT")
"""The variables (beside ``PATH``) that change a verdict: the detection cache keys on them."""
VERSION_TIMEOUT = 20.0
MODELS_TIMEOUT = 20.0  # at once with the version: harness.list answers within a client's 60 s
_MODEL = re.compile(r"[^\s/]+/\S+")


async def probe(binary: str | None, env: Mapping[str, str], *, with_models: bool = False,
                version_timeout: float = VERSION_TIMEOUT,
                models_timeout: float = MODELS_TIMEOUT) -> Detection:
    """Detect once, uncached; a missing, failing, slow or too-old binary is ``available: false``
    with the reason. ``with_models`` also runs ``opencode models`` (seconds more: it loads every
    provider; only ``harness.list {models: true}`` asks). Cancellation kills the probes."""
    base = Detection(harness=HARNESS, available=False, features=FEATURES, min_version=MIN_VERSION)
    return await probe_cli(base, find_binary(binary, "opencode", env), env,
                           name=binary or "opencode", version_timeout=version_timeout,
                           models=(lambda path: list_models(path, env, timeout=models_timeout))
                           if with_models else None)


async def list_models(path: str, env: Mapping[str, str], *,
                      timeout: float = MODELS_TIMEOUT) -> list[str] | ProbeFailed:
    """``provider/model`` of every model OpenCode offers here (``opencode models``), in its order."""
    ran = await run_probe([path, "models"], env, timeout=timeout, label="opencode models",
                          cwd=os.sep)
    if isinstance(ran, ProbeFailed):
        return ran
    if ran.exit_code != 0:
        said = f": {ran.said}" if ran.said else ""
        return ProbeFailed(reason=f"opencode models exited with {ran.exit_code}{said}")
    lines = [line.strip() for line in ran.stdout.splitlines() if line.strip()]
    odd = next((line for line in lines if not _MODEL.fullmatch(line)), None)
    if odd is not None:
        return ProbeFailed(reason=f"opencode models printed {odd[:80]!r}, not provider/model")
    return lines
