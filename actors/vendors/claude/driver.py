"""``ClaudeDriver``: the Claude Code harness as the session sees it (``actors.harness.Driver``)."""

from __future__ import annotations

from collections.abc import Callable

from actors.harness import HarnessRequest, Launch
from actors.vendors.claude.detect import FEATURES, HARNESS, Detector
from actors.vendors.claude.launch import build_launch
from actors.vendors.claude.translate import ClaudeTranslator
from protocol.models import Detection, Features

__all__ = ["ClaudeDriver"]


class ClaudeDriver:
    """Launch builder, translator factory and cached detection for Claude Code.

    ``binary`` is what detection probes (sessions pick theirs with ``options.binary``);
    ``detect_ttl`` bounds how long a detection verdict is reused; ``new_uuid`` pins the uuids
    of user lines (tests).
    """

    name: str = HARNESS
    features: Features = FEATURES

    def __init__(self, *, binary: str | None = None, detect_ttl: float = 60.0,
                 new_uuid: Callable[[], str] | None = None) -> None:
        self.detector = Detector(binary, ttl=detect_ttl)
        self._new_uuid = new_uuid

    def launch(self, request: HarnessRequest) -> Launch:
        return build_launch(request)

    def translator(self, request: HarnessRequest) -> ClaudeTranslator:
        return ClaudeTranslator(request, new_uuid=self._new_uuid)

    async def detect(self) -> Detection:
        return await self.detector.detect()
