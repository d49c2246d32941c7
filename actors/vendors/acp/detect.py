"""Detect one ACP agent: binary, version, version floor (one bounded probe per profile).

The version is the first ``x.y.z`` line of ``<binary> --version``; when that prints none (the
``version_from_package`` quirk: ``claude-code-acp``), or fails, it is read from the
``package.json`` of the profile's npm package that holds the binary (the npm bin link resolved).
A missing binary, or one below ``profile.min_version``, is ``available: false`` with the reason.
Login state is ``unknown``: ACP agents say so only when a session is opened (``authenticate``).

``actors.vendors.detection`` caches the verdict; ``features.models`` lists the models the agent
offered the last time a session opened in this daemon (ACP's session models,
``Detector.models``).
"""

from __future__ import annotations

from collections.abc import Mapping


from actors.vendors.detection import find_binary, probe_cli
from actors.vendors.probe import ProbeFailed, package_version, probe_version
from protocol.models import Detection, Features

from .profiles import Profile

__all__ = ["ENV_KEYS", "FEATURES", "VERSION_TIMEOUT", "probe"]

FEATURES = Features(steer=False, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp="acp_session")
"""What an ACP session can do, statically (the agent may still lack a model list)."""

ENV_KEYS = ("HOME",)
"""The variables (beside ``PATH``) that change a verdict: the detection cache keys on them."""
VERSION_TIMEOUT = 20.0


async def probe(profile: Profile, binary: str | None, env: Mapping[str, str], *,
                timeout: float = VERSION_TIMEOUT) -> Detection:
    """Detect once, uncached; a missing, failing or too-old binary is ``available: false`` with
    the reason. Cancellation kills the probe."""
    base = Detection(harness=profile.name, available=False, features=FEATURES,
                     min_version=profile.min_version)

    async def version(path: str) -> str | ProbeFailed:
        found: str | ProbeFailed = ProbeFailed(reason=f"{path} --version prints no version")
        if "version_from_package" not in profile.quirks:
            found = await probe_version(path, env, timeout=timeout)
        if isinstance(found, ProbeFailed) and profile.package is not None:
            found = package_version(path, profile.package) or found
        return found

    return await probe_cli(base, find_binary(binary, profile.binary, env), env,
                           name=binary or profile.binary, version_timeout=timeout, version=version)
