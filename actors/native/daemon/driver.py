"""``NativeDriver``: corral's own ADK agent as the session sees it (``actors.harness.Driver``).

* ``launch``: ``[sys.executable, "-m", "actors.native"]`` with the session's ``env`` plus
  ``CORRAL_SESSION_ID`` (the daemon's id of the session, which ``spawn`` answers the asks of),
  framed ``length_prefix``. The worker's own cwd is the source root that holds ``actors`` (so ``-m``
  finds the same code as the daemon's even without an install); its tools work in the session
  cwd, which the ``start`` frame carries.
* ``translator``: a ``NativeTranslator`` with the ``[providers]`` tables, the price table, the
  daemon's environment (for keys), a finder for store files of earlier corral sessions
  (``options.resume`` with a native session id), the ``[native]`` context settings and
  ``[native.compaction]``.
* ``spawn``: the session's spawn hook (``actors.harness``): the worker is forked from the
  daemon's fork server (``forkservice.ForkServer``) when the driver has one and the argv is the
  worker's own (a sandboxed worker's is wrapped in bubblewrap), else exec'd; either
  way it is an ``open_child`` process child (ledger, group close, exit status), whose asks
  (MCP tools, diagnostics) the driver's ``services`` answer (``actors.native.daemon.asks``) without
  the session seeing them. With ``services`` the ``start`` frame says ``daemon_tools``.
* ``detect``: available when google-adk is installed (its ``google.adk.runners`` module is found;
  the daemon never imports ADK itself), version = google-adk's; ``features.providers`` lists the
  built-in and configured providers, each with its base URL and whether its key is set in the
  daemon's environment.

Nothing here imports ADK or the model SDKs: a test keeps it so.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import msgspec

from actors.harness import HarnessRequest, Launch
from protocol.messages import SessionWarning
from protocol.models import Detection, Features, ProviderInfo
from protocol.native import Price
from protocol.native_context import ContextSettings
from supervisor.ledger.store import Ledger
from supervisor.proc.child import ProcessSpec, open_child

from .asks import NO_SERVICES, ServedChild, Services, served
from ..compaction.settings import CompactionConfig
from .forkservice import ForkServer
from .install import NATIVE_ROOT, adk_installed
from ..providers import DEFAULT_BASE_URLS, KINDS, ProviderTable, key_env
from .translate import NativeTranslator, TurnTracing, store_dir

__all__ = ["FEATURES", "HARNESS", "NATIVE_ROOT", "SESSION_ENV", "NativeDriver", "adk_installed"]

HARNESS = "native"
FEATURES = Features(steer=True, resume=True, permissions=True, interrupt=True, set_model=True)
"""What a native session can do, statically (``detect`` adds the providers)."""

WORKER_ARGV = [sys.executable, "-m", "actors.native"]
"""The worker's command line; only a spawn of exactly this is forked by the fork server."""

SESSION_ENV = "CORRAL_SESSION_ID"
"""The worker's environment variable naming its session (how ``spawn`` knows whose asks)."""


class NativeDriver:
    """See the module docstring."""

    name: str = HARNESS
    features: Features = FEATURES

    def __init__(self, *, providers: Mapping[str, ProviderTable] | None = None,
                 prices: Mapping[str, Price] | None = None,
                 environ: Mapping[str, str] | None = None,
                 forks: ForkServer | None = None,
                 context: ContextSettings = ContextSettings(),
                 services: Services | None = None,
                 compaction: CompactionConfig | None = None) -> None:
        self._providers = dict(providers or {})
        self._context = context
        self._compaction = compaction or CompactionConfig()
        self._prices = dict(prices or {})
        self._environ = os.environ if environ is None else environ
        self._forks = forks
        self.services = services
        """Answers the workers' asks; settable until the first spawn (the composition root
        makes it when it builds the driver, on the first native use)."""
        self.tracing: TurnTracing | None = None
        """The daemon's telemetry for the workers' model-call spans (set when the driver is
        built, when an OTLP endpoint is configured)."""

    def launch(self, request: HarnessRequest) -> Launch:
        """The worker's argv, env and cwd. Pure."""
        return Launch(argv=list(WORKER_ARGV),
                      env={**request.env, SESSION_ENV: request.session_id},
                      cwd=str(NATIVE_ROOT), framing="length_prefix")

    @asynccontextmanager
    async def spawn(self, launch: Launch, spec: ProcessSpec, ledger: Ledger | None,
                    opener: Any = None) -> AsyncIterator[ServedChild]:
        """The worker as a process child, forked by the fork server if there is one (or opened
        by a placement backend's ``opener`` on a node: exec'd there), with its asks answered by
        ``services``."""
        forkable = list(spec.argv) == WORKER_ARGV  # a wrapped argv (bubblewrap) is exec'd
        spawner = self._forks.spawn if self._forks is not None and forkable else None
        session_id = spec.env.get(SESSION_ENV) or ""
        opened = (open_child(spec, ledger=ledger, spawner=spawner) if opener is None
                  else opener(spec, ledger))
        async with opened as child, \
                served(child, session_id, self.services or NO_SERVICES) as wrapped:
            yield wrapped

    def warnings(self, request: HarnessRequest) -> list[SessionWarning]:
        """What ``session.create`` warns of for ``request`` (a provider without its key)."""
        return self.translator(request).warnings

    def translator(self, request: HarnessRequest) -> NativeTranslator:
        """A fresh translator for one worker; ``BadRequest`` for a bad model or options."""
        sessions = store_dir(request).parent.parent

        def find_store(native_id: str) -> str | None:
            if not native_id or "/" in native_id or native_id.startswith("."):
                return None
            found = sorted(sessions.glob(f"*/native/{native_id}.jsonl"))
            return str(found[-1]) if found else None

        return NativeTranslator(request, providers=self._providers, prices=self._prices,
                                daemon_env=self._environ, find_store=find_store,
                                context=self._context,
                                daemon_tools=self.services is not None,
                                compaction=self._compaction, tracing=self.tracing)

    async def detect(self, *, models: bool = False) -> Detection:
        """Whether google-adk is installed, its version, and the providers (see above)."""
        features = msgspec.structs.replace(FEATURES, providers=self.providers())
        if not adk_installed():
            return Detection(harness=HARNESS, available=False, features=features,
                             reason="google-adk is not installed (pip install google-adk)")
        from importlib import metadata  # here: its import costs a daemon's start more than ours

        try:
            version: str | None = metadata.version("google-adk")
        except metadata.PackageNotFoundError:
            version = None
        return Detection(harness=HARNESS, available=True, version=version,
                         path=sys.executable, features=features)

    def providers(self) -> list[ProviderInfo]:
        """The built-in and configured providers, and whether the daemon's env has each key."""
        out: list[ProviderInfo] = []
        for name in [*KINDS, *sorted(n for n in self._providers if n not in KINDS)]:
            table = self._providers.get(name, ProviderTable())
            kind = table.kind or name
            variable = key_env(name, self._providers)
            out.append(ProviderInfo(
                name=name, kind=kind, base_url=table.base_url or DEFAULT_BASE_URLS[kind],  # type: ignore[index]
                api_key_env=variable, has_key=bool(variable and self._environ.get(variable))))
        return out

