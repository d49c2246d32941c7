"""The worker's tracer: its model calls' spans, children of the daemon's turn spans.

Made at ``start`` when the daemon sent ``Start.telemetry`` (it has an OTLP endpoint): a private
tracer provider (never the global one: ADK's own spans, which carry the prompts, stay
unexported) with the SDK's batch span processor, exporting over OTLP/HTTP to the endpoint's
``/v1/traces`` from the SDK's thread. Each ``Prompt.traceparent`` becomes the parent context of
the turn's model calls (``turn_trace``, set as ``actors.native.models.tracing.TURN`` in the
turn's task). ``aclose`` exports what is left, bounded, when the worker stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from protocol.native import WorkerTelemetry

__all__ = ["WorkerTracing"]

_FLUSH_S = 3.0


class WorkerTracing:
    """The provider and the turns' parent contexts."""

    def __init__(self, settings: WorkerTelemetry) -> None:
        self.provider = TracerProvider(resource=Resource.create({SERVICE_NAME: settings.service_name}))
        self.provider.add_span_processor(BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"{settings.endpoint}/v1/traces")))
        self.tracer = self.provider.get_tracer("corral.native")

    def turn_trace(self, traceparent: str) -> _TurnTrace | None:
        """The parent of one turn's model calls, or ``None`` for a context that does not parse."""
        context = TraceContextTextMapPropagator().extract({"traceparent": traceparent}, Context())
        return _TurnTrace(self.tracer, context) if context else None

    async def aclose(self) -> None:
        """Export the spans still queued and stop the exporter, waiting at most ``_FLUSH_S``:
        in a daemon thread, so a collector that does not answer never holds the worker's exit."""
        loop = asyncio.get_running_loop()
        done = asyncio.Event()

        def flush() -> None:
            try:
                self.provider.force_flush(int(_FLUSH_S * 1000))
                self.provider.shutdown()
            finally:
                with contextlib.suppress(RuntimeError):  # the worker's loop is gone already
                    loop.call_soon_threadsafe(done.set)

        threading.Thread(target=flush, name="corral-otel-flush", daemon=True).start()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), _FLUSH_S)


class _TurnTrace:
    __slots__ = ("context", "tracer")

    def __init__(self, tracer: Any, context: Context) -> None:
        self.tracer = tracer
        self.context = context

    def start(self, name: str, attributes: dict[str, Any]) -> Any:
        return self.tracer.start_span(name, context=self.context, attributes=attributes)
