"""``GET /metrics`` on the daemon's TCP port: the metric registry in Prometheus' text format.

The listener hands each stream whose request is for ``/metrics`` here (an ``HttpRoute``). The
request passes the plain-HTTP checks of the browser's page (``Gate.foreign``: a loopback Host,
no foreign Origin) and then needs ``Authorization: Bearer <token>`` with the daemon's token,
unless the configuration makes the metrics public (``[telemetry] metrics_public``), which drops
the token check only. ``GET`` only; one response, then the stream closes.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Sequence

import h11
import trio

from supervisor.metrics.prometheus import CONTENT_TYPE, render
from supervisor.metrics.registry import Registry
from supervisor.server.gate import Gate, header
from supervisor.server.web import Reply, answer

__all__ = ["PATH", "MetricsRoute"]

PATH = "/metrics"


class MetricsRoute:
    """Serves ``/metrics`` (see the module docstring); ``token`` reads the daemon's token once."""

    def __init__(self, registry: Registry, port: Callable[[], int], token: Callable[[], str], *,
                 public: bool = False, extra_origins: Sequence[str] = ()) -> None:
        self.registry = registry
        self.port = port
        self.public = public
        self.extra_origins = tuple(extra_origins)
        self._read_token = token
        self._token: str | None = None

    async def __call__(self, stream: trio.abc.Stream, received: bytes) -> None:
        parser = h11.Connection(h11.SERVER)
        parser.receive_data(received)
        request = parser.next_event()
        if not isinstance(request, h11.Request):
            return
        if self._token is None and not self.public:
            self._token = await trio.to_thread.run_sync(self._read_token)
        await answer(stream, received, self.respond(request.method.decode("latin-1"),
                                                    header(request.headers, b"host") or "",
                                                    request.headers))

    def respond(self, method: str, host: str, headers: Sequence[tuple[bytes, bytes]]) -> Reply:
        """The reply to one request (pure but for rendering the registry)."""
        refusal = Gate(self.port(), self.extra_origins).foreign(host, headers, unix=False)
        if refusal is not None:
            return Reply(403, f"forbidden: {refusal}\n".encode())
        if not self.public and not self._authorised(header(headers, b"authorization")):
            return Reply(401, b"not authorised: send Authorization: Bearer <token> (the daemon's "
                              b"token file)\n", headers=(("WWW-Authenticate", "Bearer"),))
        if method != "GET":
            return Reply(405, b"method not allowed: only GET is served\n", headers=(("Allow", "GET"),))
        return Reply(200, render(self.registry), CONTENT_TYPE)

    def _authorised(self, value: str | None) -> bool:
        if value is None or self._token is None:
            return False
        scheme, _, credentials = value.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(credentials.strip().encode(),
                                                                 self._token.encode())
