"""``PiDriver``: the pi harness as the session sees it (``actors.harness.Driver``).

It ties the pure pieces together: ``launch`` (``launch.build_launch``), a fresh
``PiTranslator`` per child, and ``detect`` (cached; its resolved binary becomes the default
executable of later launches unless ``options.binary`` names one).
"""

from __future__ import annotations

from collections.abc import Mapping

from actors.harness import HarnessRequest, Launch
from protocol.models import Detection, Features

from actors.vendors.detection import DetectionCache, Detector
from actors.vendors.options import configured_env

from .detect import ENV_KEYS, FEATURES, HARNESS, probe
from .launch import DEFAULT_BINARY, HOME_ENV, build_launch
from .translate import PiTranslator

__all__ = ["PiDriver"]


class PiDriver:
    """Drives ``pi --mode rpc`` over its JSONL commands and events on stdio."""

    name: str = HARNESS
    features: Features = FEATURES

    def __init__(self, *, binary: str | None = None, env: Mapping[str, str] | None = None,
                 home: str | None = None, cache: DetectionCache | None = None,
                 detector: Detector | None = None) -> None:
        self._binary = binary
        self._detector = detector if detector is not None else Detector(
            HARNESS, probe, binary=binary, overlay=configured_env({}, env, home, HOME_ENV),
            env_keys=ENV_KEYS, cache=cache)

    def launch(self, request: HarnessRequest) -> Launch:
        """The argv/env/cwd for ``request``; pure apart from reading the last detection."""
        binary = self._binary or self._detector.binary or DEFAULT_BINARY
        return build_launch(request, default_binary=binary)

    def translator(self, request: HarnessRequest) -> PiTranslator:
        """A fresh translator for one child process (refuses bad options)."""
        return PiTranslator(request)

    async def detect(self, *, models: bool = False) -> Detection:
        """Binary, version, floor, login state and models (cached)."""
        return await self._detector.detect()
