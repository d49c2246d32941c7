"""``AcpDriver``: one ACP agent profile as the session sees it (``actors.harness.Driver``).

One class serves every ACP harness; the ``Profile`` is the difference. It ties together the
launch builder, a fresh ``AcpTranslator`` per child, the ``work_runner`` for client-side ``Work``,
and detection. It remembers, per corral session, when its children were launched and when they
opened their ACP session (wall clock), which the ``load_next_minute`` quirk needs, and the
models the agent offered (``features.models``).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from importlib import metadata
from typing import Any

from actors.harness import HarnessRequest, Launch
from protocol.models import Detection, Features

from actors.vendors.detection import DetectionCache, Detector
from actors.vendors.options import configured_env, vendor_options

from .detect import ENV_KEYS, FEATURES, probe
from .launch import AcpOptions, build_launch, minute_wait
from .profiles import Profile
from .translate import AcpTranslator
from .work_runner import AcpWorkRunner, open_work_runner

__all__ = ["AcpDriver"]


class AcpDriver:
    """Drives one ACP agent (``profile``) over JSON-RPC on stdio."""

    features: Features = FEATURES

    def __init__(self, profile: Profile, *, binary: str | None = None,
                 env: Mapping[str, str] | None = None, home: str | None = None,
                 cache: DetectionCache | None = None,
                 detector: Detector | None = None, client_name: str = "corral",
                 clock: Callable[[], float] = time.time) -> None:
        self.name = profile.name
        self.profile = profile
        self._binary = binary
        self.detector = detector if detector is not None else Detector(
            profile.name, functools.partial(probe, profile), binary=binary,
            overlay=configured_env(profile.env, env, home, profile.home_env),
            env_keys=ENV_KEYS, cache=cache,
            models_probe=functools.partial(probe, profile, with_models=True))
        self._client_name = client_name
        self._client_version = _version()
        self._clock = clock
        self._launched: dict[str, float] = {}
        self._opened: dict[str, float] = {}

    def launch(self, request: HarnessRequest) -> Launch:
        """The argv/env/cwd for ``request`` (reads the wall clock for the minute quirk)."""
        now = self._clock()
        wait = 0.0
        if request.resume and "load_next_minute" in self.profile.quirks:
            wait = minute_wait(now, self._opened.get(request.session_id),
                               self._launched.get(request.session_id))
        self._launched[request.session_id] = now + wait
        binary = self._binary or self.detector.binary
        return build_launch(request, self.profile, default_binary=binary, wait=wait)

    def translator(self, request: HarnessRequest) -> AcpTranslator:
        """A fresh translator for one child process (refuses bad options at session.create)."""
        vendor_options(request, AcpOptions)

        def opened(vendor_id: str, models: list[str]) -> None:
            self._opened[request.session_id] = self._clock()
            if models:
                self.detector.models = models

        return AcpTranslator(request, self.profile, client_name=self._client_name,
                             client_version=self._client_version, on_open=opened)

    def work_runner(self, request: HarnessRequest,
                    ledger: Any = None) -> AbstractAsyncContextManager[AcpWorkRunner]:
        """The client-side work runner for one child: files and terminals in ``request.cwd``,
        never in the daemon's state directory; terminals recorded in ``ledger``."""
        return open_work_runner(request.cwd, {**os.environ, **self.profile.env, **request.env},
                                state_dir=request.state_dir, ledger=ledger,
                                key=f"session:{request.session_id}")

    async def detect(self, *, models: bool = False) -> Detection:
        """Binary, version and floor (cached; runs ``--version`` when stale); ``models`` also
        opens a throwaway session for the models the agent offers."""
        return await self.detector.detect(models=models)


def _version() -> str:
    try:
        return metadata.version("corral")
    except metadata.PackageNotFoundError:
        return "0"
