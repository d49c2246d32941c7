"""Detect one ACP agent: binary, version, version floor and models (bounded probes per profile).

The version is the first ``x.y.z`` line of ``<binary> --version``; when that prints none (the
``version_from_package`` quirk: ``claude-code-acp``), or fails, it is read from the
``package.json`` of the profile's npm package that holds the binary (the npm bin link resolved).
A missing binary, or one below ``profile.min_version``, is ``available: false`` with the reason.
Login state is ``unknown``: ACP agents say so only when a session is opened (``authenticate``).

``features.models`` are the models the agent offers a new session (``models.list_models``: the
agent started the profile's way, ``initialize`` and ``session/new`` in a throwaway directory),
asked at once with the version when ``harness.list`` asks for models; an agent that cannot open a session without a login or a key
stays available, and ``reason`` says why its models are missing. Then the models it offered the
last time a session opened in this daemon fill in (``Detector.models``).
``actors.vendors.detection`` caches the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping

from actors.vendors.detection import find_binary, probe_cli
from actors.vendors.probe import ProbeFailed, package_version, probe_version
from protocol.models import Detection, Features

from .models import MODELS_TIMEOUT, list_models
from .profiles import Profile

__all__ = ["ENV_KEYS", "FEATURES", "VERSION_TIMEOUT", "probe"]

FEATURES = Features(steer=False, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp="acp_session")
"""What an ACP session can do, statically (the agent may still lack a model list)."""

ENV_KEYS = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME",
            "COPILOT_HOME", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL",
            "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "CODEX_API_KEY",
            "COPILOT_PROVIDER_BASE_URL", "COPILOT_MODEL", "GH_TOKEN", "GITHUB_TOKEN",
            "OPENCODE_CONFIG_CONTENT")
"""The variables (beside ``PATH``) that change a verdict — the agents' homes and the keys and
servers that decide whether a session opens and which models it offers: the detection cache
keys on them (hashed)."""
VERSION_TIMEOUT = 20.0


async def probe(profile: Profile, binary: str | None, env: Mapping[str, str], *,
                with_models: bool = False, timeout: float = VERSION_TIMEOUT,
                models_timeout: float = MODELS_TIMEOUT) -> Detection:
    """Detect once, uncached; a missing, failing or too-old binary is ``available: false`` with
    the reason. ``with_models`` also opens a session to list the models (seconds more: only
    ``harness.list {models: true}`` asks). Cancellation kills the probes."""
    base = Detection(harness=profile.name, available=False, features=FEATURES,
                     min_version=profile.min_version)

    async def version(path: str) -> str | ProbeFailed:
        # The package's own version where the binary comes from its npm package (Copilot's
        # ``--version`` says "GitHub Copilot CLI 1.0.102."), else what ``--version`` says.
        found: str | ProbeFailed = ProbeFailed(reason=f"{path} --version prints no version")
        if "version_from_package" not in profile.quirks:
            found = await probe_version(path, env, timeout=timeout)
        if profile.package is not None:
            found = package_version(path, profile.package) or found
        return found

    return await probe_cli(base, find_binary(binary, profile.binary, env), env,
                           name=binary or profile.binary, version_timeout=timeout, version=version,
                           models=(lambda path: list_models(profile, path, env, timeout=models_timeout))
                           if with_models else None)
