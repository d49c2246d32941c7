"""``OpenCodeDriver``: the OpenCode harness as the session sees it (``actors.harness.Driver``).

Unlike the other drivers its children are not processes: ``spawn`` (the session's spawn hook,
``actors.harness``) attaches the session to the shared server of its launch's fingerprint
(``servers.OpenCodeServers``) and yields a ``transport.ServerChild``. ``launch`` builds the
launch of that *server*; ``translator`` speaks HTTP and SSE over the virtual wire. On a
placement backend other than ``local`` (a Ray cluster) ``spawn`` gets the backend's ``opener``
and the child is a process after all: the bridge (``bridge``) on a node, the session's own server
behind its stdin and stdout, carrying the same frames.
"""

from __future__ import annotations

import functools
import sys

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import trio

from actors.harness import HarnessRequest, Launch
from protocol.models import Detection, Features
from supervisor.proc.spec import ProcessSpec

from actors.vendors.detection import DetectionCache, Detector
from actors.vendors.options import configured_env

from .detect import ENV_KEYS, FEATURES, HARNESS, probe
from .launch import DEFAULT_BINARY, HOME_ENV, build_launch
from .server import ServerSettings
from .servers import OpenCodeServers
from .translate import OpenCodeTranslator
from .transport import ServerChild, open_server_child

__all__ = ["BRIDGE", "OpenCodeDriver", "bridge_spec", "provider_models"]

BRIDGE = "actors.vendors.opencode.bridge"
"""The module a node runs as an OpenCode session's child (``bridge``; not imported here)."""

_PROVIDERS_TIMEOUT = 10.0


class OpenCodeDriver:
    """Drives sessions on shared ``opencode serve`` processes over HTTP and SSE."""

    name: str = HARNESS
    features: Features = FEATURES

    def __init__(self, servers: OpenCodeServers, *, binary: str | None = None,
                 env: Mapping[str, str] | None = None, home: str | None = None,
                 cache: DetectionCache | None = None,
                 detector: Detector | None = None) -> None:
        self.servers = servers
        self._binary = binary
        self._detector = detector if detector is not None else Detector(
            HARNESS, probe, binary=binary, overlay=configured_env({}, env, home, HOME_ENV),
            env_keys=ENV_KEYS, cache=cache,
            models_probe=functools.partial(probe, with_models=True))

    def launch(self, request: HarnessRequest) -> Launch:
        """The launch of the server ``request`` needs (its fingerprint picks the server)."""
        binary = self._binary or self._detector.binary or DEFAULT_BINARY
        return build_launch(request, default_binary=binary)

    def translator(self, request: HarnessRequest) -> OpenCodeTranslator:
        """A fresh translator for one attachment (refuses bad options)."""
        build_launch(request)
        return OpenCodeTranslator(request)

    @asynccontextmanager
    async def spawn(self, launch: Launch, spec: Any, ledger: Any, *,
                    opener: Any = None) -> AsyncIterator[Any]:
        """The session's child: an attachment to the shared server for ``launch``. The first
        attachment also reads the server's providers into ``features.models``.

        With a placement backend's ``opener`` the child runs on a node instead: the bridge
        (``bridge``), a stdio child running the session's own server there, whose frames are the
        attachment's; the node must have the OpenCode binary too (``needs``)."""
        if opener is not None:
            async with opener(bridge_spec(spec, self.servers.settings), ledger,
                              needs=[launch.argv[0]]) as remote:
                yield remote
            return
        async with open_server_child(self.servers, launch) as child:
            if not self._detector.models:
                self._detector.models = await provider_models(child)
            yield child

    async def detect(self, *, models: bool = False) -> Detection:
        """Binary, version and floor (cached), with the models the first server offered;
        ``models`` also runs ``opencode models``."""
        return await self._detector.detect(models=models)


def bridge_spec(spec: ProcessSpec, settings: ServerSettings) -> ProcessSpec:
    """The session child's ``spec`` (the server's launch) as the bridge that runs that server
    on a node: ``python -m actors.vendors.opencode.bridge -- OPENCODE serve …``, in the same cwd
    with the same environment (so nothing secret is on its command line), framed by length, with
    the server's frame limit (an event of its stream, as on a shared server)."""
    return msgspec.structs.replace(
        spec, argv=[sys.executable, "-m", BRIDGE, "--", *spec.argv], framing="length_prefix",
        frame_limit=settings.frame_limit)


class _Provider(msgspec.Struct, frozen=True):
    id: str
    models: dict[str, Any] = {}


class _Providers(msgspec.Struct, frozen=True):
    providers: list[_Provider] = []


async def provider_models(child: ServerChild) -> list[str]:
    """``provider/model`` of every model the server offers (``GET /config/providers``); ``[]``
    when it does not answer in time or answers something else."""
    from .http import HttpError  # the HTTP client loads with the first OpenCode server

    with trio.move_on_after(_PROVIDERS_TIMEOUT):
        try:
            status, body = await child.client.request("GET", "/config/providers")
            if status == 200:
                found = msgspec.json.decode(body, type=_Providers)
                return [f"{p.id}/{m}" for p in found.providers for m in p.models]
        except (HttpError, msgspec.DecodeError):
            pass
    return []
