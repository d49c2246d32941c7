"""The OpenTelemetry SDK behind corral's telemetry: spans and metrics over OTLP/HTTP (protobuf).

Imported (in a worker thread) only when an endpoint is configured (``corral[otel]``). One
``Exporter`` holds a tracer provider with the SDK's batch span processor and a meter provider
with its periodic reader, both of them private (no global provider is set) and both exporting
from their own threads: ending a span on the trio thread only queues it. The SDK reads
``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_BSP_*`` and ``OTEL_METRIC_EXPORT_INTERVAL`` itself.

The metrics are read from corral's own registry: a counter or gauge is an observable instrument
whose callback (run in the reader's thread) takes the registry's snapshot; the histogram gets
each observation through its ``listeners``, with the registry's bucket bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, Status, StatusCode, set_span_in_context

from actors.telemetry.config import ExportSettings
from actors.telemetry.observer import Attributes
from supervisor import __version__
from supervisor.metrics import Counter, Gauge, Histogram, Registry

__all__ = ["Exporter"]

_SCOPE = "corral"


class Exporter:
    """Both providers and the span sink the observer writes to (``observer.SpanSink``)."""

    def __init__(self, settings: ExportSettings, registry: Registry) -> None:
        resource = Resource.create({SERVICE_NAME: settings.service_name})
        self.tracer_provider = TracerProvider(resource=resource)
        self.tracer_provider.add_span_processor(BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"{settings.endpoint}/v1/traces")))
        self.tracer = self.tracer_provider.get_tracer(_SCOPE, __version__)
        histograms = [m for m in registry if isinstance(m, Histogram)]
        self.meter_provider = MeterProvider(
            resource=resource,
            metric_readers=[PeriodicExportingMetricReader(
                OTLPMetricExporter(endpoint=f"{settings.endpoint}/v1/metrics"))],
            views=[View(instrument_name=h.name,
                        aggregation=ExplicitBucketHistogramAggregation(h.buckets)) for h in histograms])
        meter = self.meter_provider.get_meter(_SCOPE, __version__)
        self._listeners: list[tuple[Histogram, Callable[[float, tuple[str, ...]], None]]] = []
        for metric in registry:
            if isinstance(metric, Counter):
                meter.create_observable_counter(metric.name, [_reader(metric)], metric.unit, metric.help)
            elif isinstance(metric, Gauge):
                meter.create_observable_gauge(metric.name, [_reader(metric)], metric.unit, metric.help)
            else:
                instrument = meter.create_histogram(metric.name, metric.unit, metric.help)
                names = metric.labels

                def record(value: float, labels: tuple[str, ...], _i: Any = instrument,
                           _names: tuple[str, ...] = names) -> None:
                    _i.record(value, dict(zip(_names, labels)))

                metric.listeners.append(record)
                self._listeners.append((metric, record))

    # --- the span sink ----------------------------------------------------------------------

    def start(self, name: str, at_ns: int, attributes: Attributes, parent: Any | None) -> Span:
        context = Context() if parent is None else set_span_in_context(parent, Context())
        return self.tracer.start_span(name, context=context, attributes=attributes, start_time=at_ns)

    def end(self, span: Span, at_ns: int, attributes: Attributes, error: str | None) -> None:
        span.set_attributes(attributes)
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=at_ns)

    def traceparent(self, span: Span) -> str:
        context = span.get_span_context()
        return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"

    # --- the end ----------------------------------------------------------------------------

    def shutdown(self, timeout: float) -> None:
        """Export what is left (spans, then a last collection of the metrics) and stop both
        providers' threads. Blocking: run it in a worker thread, under a bound."""
        for metric, record in self._listeners:
            metric.listeners.remove(record)
        millis = max(1, int(timeout * 1000))
        self.tracer_provider.force_flush(millis)
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown(timeout_millis=millis)


def _reader(metric: Counter | Gauge) -> Callable[[CallbackOptions], Iterable[Observation]]:
    names = metric.labels

    def observe(options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(value, dict(zip(names, labels))) for labels, value in metric.snapshot().items()]

    return observe
