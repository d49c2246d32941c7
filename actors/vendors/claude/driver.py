"""``ClaudeDriver``: the Claude Code harness as the session sees it (``actors.harness.Driver``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec

from actors.harness import HarnessRequest, Launch
from actors.vendors.claude.detect import ENV_KEYS, FEATURES, HARNESS, probe
from actors.vendors.detection import DetectionCache, Detector
from actors.vendors.claude.launch import FIXED_ENV, HOME_ENV, build_launch, claude_options
from actors.vendors.options import configured_env
from actors.vendors.claude.translate import ClaudeTranslator
from protocol.models import Detection, Features

__all__ = ["ClaudeDriver"]


class ClaudeDriver:
    """Launch builder, translator factory and cached detection for Claude Code.

    ``binary`` is what detection probes (sessions pick theirs with ``options.binary``), ``env``
    and ``home`` the configured ``[harness.claude] env`` and ``home`` that detection sees as
    sessions do;
    ``cache`` is the daemon's detection cache (a private one if none); ``new_uuid`` pins the
    uuids of user lines (tests).

    The one piece of state: the conversations a session asked to resume that Claude said it
    does not have (its child was killed before Claude wrote the transcript). The session keeps
    asking for the same id on every restart; ``launch`` drops ``--resume`` for those, so the
    restart starts a new conversation (whose id the session then learns) instead of failing
    again until the restart intensity gives up.
    """

    name: str = HARNESS
    features: Features = FEATURES

    def __init__(self, *, binary: str | None = None, env: Mapping[str, str] | None = None,
                 home: str | None = None, cache: DetectionCache | None = None,
                 new_uuid: Callable[[], str] | None = None) -> None:
        self.detector = Detector(HARNESS, probe, binary=binary,
                                 overlay=configured_env(FIXED_ENV, env, home, HOME_ENV),
                                 env_keys=ENV_KEYS, cache=cache)
        self._new_uuid = new_uuid
        self._missing: set[tuple[str, str]] = set()

    def launch(self, request: HarnessRequest) -> Launch:
        return build_launch(self._afresh(request))

    def translator(self, request: HarnessRequest) -> ClaudeTranslator:
        """A fresh translator for one child process (refuses bad options at session.create)."""
        claude_options(request)
        request = self._afresh(request)
        session_id = request.session_id
        return ClaudeTranslator(request, new_uuid=self._new_uuid,
                                on_missing=lambda missing: self._missing.add((session_id, missing)))

    def _afresh(self, request: HarnessRequest) -> HarnessRequest:
        """``request`` without a resume target Claude already said it does not have."""
        if request.resume is not None and (request.session_id, request.resume) in self._missing:
            return msgspec.structs.replace(request, resume=None)
        return request

    async def detect(self, *, models: bool = False) -> Detection:
        """Binary, version, floor, login state and models (cached)."""
        return await self.detector.detect()
