"""Detect OpenCode on this machine: binary and version (``opencode --version``, a bounded probe).

``actors.vendors.detection`` caches the verdict. ``features.models`` lists the models of the
first server a session used in this daemon (its ``GET /config/providers``, read by the
driver's first attachment into ``Detector.models``). Login state is ``unknown``: OpenCode keeps credentials per provider, in its data
directory or in provider variables, and says nothing about them without a server.
"""

from __future__ import annotations

from collections.abc import Mapping


from actors.vendors.detection import find_binary, probe_cli
from protocol.models import Detection, Features

__all__ = ["ENV_KEYS", "FEATURES", "HARNESS", "MIN_VERSION", "probe"]

HARNESS = "opencode"
MIN_VERSION = "1.18.0"
"""The oldest OpenCode checked against this driver (``permission.asked``, ``/global/event``)."""

FEATURES = Features(steer=False, resume=True, permissions=True, interrupt=True, set_model=True,
                    mcp="opencode_config")
ENV_KEYS = ("HOME",)
"""The variables (beside ``PATH``) that change a verdict: the detection cache keys on them."""
VERSION_TIMEOUT = 20.0


async def probe(binary: str | None, env: Mapping[str, str], *,
                timeout: float = VERSION_TIMEOUT) -> Detection:
    """Detect once, uncached; a missing, failing, slow or too-old binary is ``available: false``
    with the reason. Cancellation kills the probe."""
    base = Detection(harness=HARNESS, available=False, features=FEATURES, min_version=MIN_VERSION)
    return await probe_cli(base, find_binary(binary, "opencode", env), env,
                           name=binary or "opencode", version_timeout=timeout)
