"""``NativeDriver``: corral's own ADK agent as the session sees it (``actors.harness.Driver``).

* ``launch``: ``[sys.executable, "-m", "actors.native"]`` with the session's ``env``, framed
  ``length_prefix``. The worker's own cwd is the source root that holds ``actors`` (so ``-m``
  finds the same code as the daemon's even without an install); its tools work in the session
  cwd, which the ``start`` frame carries.
* ``translator``: a ``NativeTranslator`` with the ``[providers]`` tables, the price table, the
  daemon's environment (for keys) and a finder for store files of earlier corral sessions
  (``options.resume`` with a native session id).
* ``detect``: available when google-adk is installed (its ``google.adk.runners`` module is found;
  the daemon never imports ADK itself), version = google-adk's; ``features.providers`` lists the
  built-in and configured providers, each with its base URL and whether its key is set in the
  daemon's environment.

Nothing here imports ADK or the model SDKs: a test keeps it so.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import msgspec

from actors.harness import HarnessRequest, Launch
from protocol.models import Detection, Features, ProviderInfo
from protocol.native import Price

from .config import DEFAULT_BASE_URLS, KINDS, ProviderTable, key_env
from .translate import NativeTranslator, store_dir

__all__ = ["FEATURES", "HARNESS", "NativeDriver"]

HARNESS = "native"
FEATURES = Features(steer=True, resume=True, permissions=True, interrupt=True, set_model=True)
"""What a native session can do, statically (``detect`` adds the providers)."""

_SOURCE_ROOT = Path(__file__).resolve().parents[2]


class NativeDriver:
    """See the module docstring."""

    name: str = HARNESS
    features: Features = FEATURES

    def __init__(self, *, providers: Mapping[str, ProviderTable] | None = None,
                 prices: Mapping[str, Price] | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        self._providers = dict(providers or {})
        self._prices = dict(prices or {})
        self._environ = os.environ if environ is None else environ

    def launch(self, request: HarnessRequest) -> Launch:
        """The worker's argv, env and cwd. Pure."""
        return Launch(argv=[sys.executable, "-m", "actors.native"], env=dict(request.env),
                      cwd=str(_SOURCE_ROOT), framing="length_prefix")

    def translator(self, request: HarnessRequest) -> NativeTranslator:
        """A fresh translator for one worker; ``BadRequest`` for a bad model or options."""
        sessions = store_dir(request).parent.parent

        def find_store(native_id: str) -> str | None:
            if not native_id or "/" in native_id or native_id.startswith("."):
                return None
            found = sorted(sessions.glob(f"*/native/{native_id}.jsonl"))
            return str(found[-1]) if found else None

        return NativeTranslator(request, providers=self._providers, prices=self._prices,
                                daemon_env=self._environ, find_store=find_store)

    async def detect(self) -> Detection:
        """Whether google-adk is installed, its version, and the providers (see above)."""
        features = msgspec.structs.replace(FEATURES, providers=self.providers())
        try:
            found = importlib.util.find_spec("google.adk.runners") is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return Detection(harness=HARNESS, available=False, features=features,
                             reason="google-adk is not installed (pip install google-adk)")
        try:
            version: str | None = importlib.metadata.version("google-adk")
        except importlib.metadata.PackageNotFoundError:
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

