"""``PiDriver``: the pi harness as the session sees it (``actors.harness.Driver``).

It ties the pure pieces together: ``launch`` (``launch.build_launch``), a fresh
``PiTranslator`` per child, and ``detect`` (cached; its resolved binary becomes the default
executable of later launches unless ``options.binary`` names one).
"""

from __future__ import annotations

from actors.harness import HarnessRequest, Launch
from protocol.models import Detection, Features

from .detect import FEATURES, HARNESS, PiDetector
from .launch import DEFAULT_BINARY, build_launch
from .translate import PiTranslator

__all__ = ["PiDriver"]


class PiDriver:
    """Drives ``pi --mode rpc`` over its JSONL commands and events on stdio."""

    name: str = HARNESS
    features: Features = FEATURES

    def __init__(self, *, binary: str | None = None, detector: PiDetector | None = None) -> None:
        self._binary = binary
        self._detector = detector if detector is not None else PiDetector(binary=binary)

    def launch(self, request: HarnessRequest) -> Launch:
        """The argv/env/cwd for ``request``; pure apart from reading the last detection."""
        binary = self._binary or self._detector.binary or DEFAULT_BINARY
        return build_launch(request, default_binary=binary)

    def translator(self, request: HarnessRequest) -> PiTranslator:
        """A fresh translator for one child process (refuses bad options)."""
        return PiTranslator(request)

    async def detect(self) -> Detection:
        """Binary, version, floor, login state and models (cached)."""
        return await self._detector.detect()
