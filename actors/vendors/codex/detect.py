"""Detect Codex on this machine: binary, version, version floor, login state and models.

``probe`` runs ``<binary> --version`` and ``<binary> debug models`` (Codex's model catalog as
JSON, offline) as bounded, group-killed probes (``actors.vendors.probe``); a models probe that
fails leaves Codex available and says why in ``reason``. ``actors.vendors.detection`` caches
the verdict.

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
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec

from actors.vendors.detection import probe_cli
from actors.vendors.probe import ProbeFailed, run_probe
from protocol.models import Detection, Features

__all__ = ["ENV_KEYS", "FEATURES", "HARNESS", "MIN_VERSION", "find_binary", "list_models",
           "login_state", "probe"]

HARNESS = "codex"
MIN_VERSION = "0.153.0"
"""The oldest Codex whose app-server speaks the v2 thread/turn API we drive (steer included)."""

FEATURES = Features(steer=True, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp="codex_config_args")
"""What a Codex session can do, statically."""

ENV_KEYS = ("HOME", "CODEX_HOME", "OPENAI_API_KEY", "CODEX_API_KEY")
"""The variables (beside ``PATH``) that change a verdict: the detection cache keys on them."""

VERSION_TIMEOUT = 20.0
MODELS_TIMEOUT = 20.0  # at once with the version: harness.list answers within a client's 60 s
_TARGETS = {
    ("Linux", "x86_64"): ("codex-linux-x64", "x86_64-unknown-linux-musl"),
    ("Linux", "aarch64"): ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
    ("Darwin", "x86_64"): ("codex-darwin-x64", "x86_64-apple-darwin"),
    ("Darwin", "arm64"): ("codex-darwin-arm64", "aarch64-apple-darwin"),
}


async def probe(binary: str | None, env: Mapping[str, str], *,
                version_timeout: float = VERSION_TIMEOUT,
                models_timeout: float = MODELS_TIMEOUT) -> Detection:
    """Detect once, uncached; a missing, failing, slow or too-old binary is ``available: false``
    with the reason. Cancellation kills the probes."""
    base = Detection(harness=HARNESS, available=False, features=FEATURES,
                     min_version=MIN_VERSION, login=login_state(env))
    return await probe_cli(base, find_binary(binary, env.get("PATH")), env, name=binary or "codex",
                           version_timeout=version_timeout,
                           models=lambda path: list_models(path, env, timeout=models_timeout))


async def list_models(path: str, env: Mapping[str, str], *,
                      timeout: float = MODELS_TIMEOUT) -> list[str] | ProbeFailed:
    """The models Codex offers here: the slugs its model catalog lists for the picker
    (``codex debug models``, read offline from the catalog the CLI ships or cached; hidden
    entries, which are internal, left out)."""
    ran = await run_probe([path, "debug", "models"], env, timeout=timeout, label="codex debug models")
    if isinstance(ran, ProbeFailed):
        return ran
    if ran.exit_code != 0:
        return ProbeFailed(reason=f"codex debug models exited with {ran.exit_code}")
    try:
        catalog = msgspec.json.decode(ran.stdout, type=_Catalog)
    except msgspec.DecodeError as exc:
        return ProbeFailed(reason=f"codex debug models printed no model catalog: {exc}")
    return [model.slug for model in catalog.models if model.visibility == "list"]


class _Model(msgspec.Struct):
    slug: str
    visibility: str = "list"


class _Catalog(msgspec.Struct):
    models: list[_Model]


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
