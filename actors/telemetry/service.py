"""The daemon's telemetry: the metric registry, the event observer, and the optional exporter.

``Telemetry`` is built with the daemon. Its registry and observer always exist (``GET /metrics``
reads the one; every session hands its events to the other). With an OTLP endpoint configured
(``config.export_settings``), ``run`` is a permanent child of the root supervisor, first of the
application's children so that it stops last (after the sessions' last spans): it imports the
SDK in a worker thread (``actors.telemetry.otel``), builds the exporter there, hands the
observer its span sink, and reports ready. Stopping it flushes the spans and a last collection
of the metrics in a worker thread, for at most ``FLUSH_TIMEOUT`` seconds (then the thread is
abandoned: a dead collector cannot hold the daemon's exit). Without ``corral[otel]`` installed
it logs one warning and exports nothing. With no endpoint, it is not a child at all and nothing
of OpenTelemetry is imported.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import trio

from actors.telemetry.config import ExportSettings, TelemetryConfig, export_settings
from actors.telemetry.metricset import CorralMetrics
from actors.telemetry.observer import Observer
from supervisor.metrics import Registry
from supervisor.threadimport import load
from supervisor.tree import ChildSpec

if TYPE_CHECKING:
    from actors.native.daemon.translate import TurnTracing

__all__ = ["FLUSH_TIMEOUT", "Telemetry"]

log = logging.getLogger("corral.telemetry")

FLUSH_TIMEOUT = 5.0
"""Seconds a graceful stop waits for the last spans and metrics to be exported."""


class Telemetry:
    """The registry, the observer and (when configured) the exporter's lifetime."""

    def __init__(self, config: TelemetryConfig, environ: Mapping[str, str]) -> None:
        self.config = config
        self.registry = Registry()
        self.metrics = CorralMetrics(self.registry)
        self.observer = Observer(self.metrics, capture_content=config.capture_content)
        self.settings: ExportSettings | None = export_settings(config, environ)
        """The exporter's settings; ``None``: telemetry is off (no exporter, no SDK import)."""

    def native_tracing(self) -> TurnTracing | None:
        """What the native workers need to add their model calls' spans to the turns (``None``
        when telemetry is off): the endpoint, and each prompt's turn context from the observer."""
        settings, observer = self.settings, self.observer
        if settings is None:
            return None
        # With the native driver (built on the first native use), not at the daemon's start.
        from actors.native.daemon.translate import TurnTracing
        from protocol.native import WorkerTelemetry

        def context(session_id: str, model: str) -> str | None:
            return observer.turn_context(session_id, "native", model, time.time())

        return TurnTracing(WorkerTelemetry(endpoint=settings.endpoint,
                                           service_name=settings.service_name), context)

    def children(self) -> list[ChildSpec]:
        """The exporter's child spec, or none when telemetry is off."""
        if self.settings is None:
            return []
        return [ChildSpec(id="telemetry", start=functools.partial(self.run, self.settings),
                          shutdown=FLUSH_TIMEOUT + 1.0)]

    async def run(self, settings: ExportSettings, *,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Export until cancelled, then flush (bounded; see the module docstring)."""
        try:
            otel = await load("actors.telemetry.otel")
            exporter: Any = await trio.to_thread.run_sync(otel.Exporter, settings, self.registry)
        except ImportError as exc:  # not a crash loop: the daemon runs on, without export
            log.warning("telemetry: not exporting to %s: %s (install 'corral[otel]')",
                        settings.endpoint, exc)
            task_status.started()
            await trio.sleep_forever()
        self.observer.spans = exporter
        log.info("telemetry: exporting to %s as %r", settings.endpoint, settings.service_name)
        try:
            task_status.started()
            await trio.sleep_forever()
        finally:
            self.observer.spans = None
            with trio.CancelScope(shield=True), trio.move_on_after(FLUSH_TIMEOUT) as scope:
                await trio.to_thread.run_sync(exporter.shutdown, FLUSH_TIMEOUT, abandon_on_cancel=True)
            if scope.cancelled_caught:
                log.warning("telemetry: the last export did not finish in %g s", FLUSH_TIMEOUT)
