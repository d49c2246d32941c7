"""A fake OpenTelemetry collector: OTLP over HTTP/protobuf on 127.0.0.1, decoded with the
``opentelemetry-proto`` package.

``async with collector() as c`` serves ``POST /v1/traces`` and ``POST /v1/metrics`` until the
block ends; ``c.url`` is the base URL to configure. Every span received is kept as a ``Span``
(ids in hex, attributes as plain values, the resource's service name), every metric data point
as a ``Point`` (the latest export of each series wins in ``c.metrics``), and each request's
headers too. ``await c.wait_for(predicate)`` waits until ``predicate(c)`` holds.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import h11
import trio
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.fakes.http import read_request

__all__ = ["Collector", "Point", "Span", "collector"]


@dataclass(frozen=True)
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status: str  # "unset", "ok" or "error"
    service: str
    scope: str


@dataclass(frozen=True)
class Point:
    metric: str
    kind: str  # "sum", "gauge" or "histogram"
    attributes: dict[str, Any]
    value: float  # a sum's or gauge's value; a histogram's count
    buckets: tuple[int, ...] = ()
    bounds: tuple[float, ...] = ()
    monotonic: bool = False


@dataclass
class Collector:
    url: str = ""
    spans: list[Span] = field(default_factory=list)
    metrics: dict[tuple[str, tuple[tuple[str, Any], ...]], Point] = field(default_factory=dict)
    headers: list[dict[str, str]] = field(default_factory=list)
    _changed: trio.Event = field(default_factory=trio.Event)

    def points(self, metric: str) -> list[Point]:
        """The latest point of each series of ``metric``."""
        return [p for (name, _), p in self.metrics.items() if name == metric]

    def value(self, metric: str, **attributes: Any) -> float | None:
        """The latest value of the series of ``metric`` with exactly ``attributes``."""
        point = self.metrics.get((metric, tuple(sorted(attributes.items()))))
        return None if point is None else point.value

    async def wait_for(self, predicate: Callable[[Collector], bool], timeout: float = 30) -> None:
        with trio.fail_after(timeout):
            while not predicate(self):
                await self._changed.wait()

    def _received(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _serve(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        async with stream:
            while True:
                request, body = await read_request(conn, stream)
                if request is None:
                    return
                self.headers.append({k.decode(): v.decode() for k, v in request.headers})
                path = request.target.decode()
                status, answer = 200, b""
                if path == "/v1/traces":
                    self._traces(ExportTraceServiceRequest.FromString(body))
                    answer = ExportTraceServiceResponse().SerializeToString()
                elif path == "/v1/metrics":
                    self._metrics(ExportMetricsServiceRequest.FromString(body))
                    answer = ExportMetricsServiceResponse().SerializeToString()
                else:
                    status = 404
                data = conn.send(h11.Response(status_code=status, headers=[
                    ("Content-Type", "application/x-protobuf"), ("Content-Length", str(len(answer)))]))
                data = (data or b"") + (conn.send(h11.Data(data=answer)) or b"")
                data += conn.send(h11.EndOfMessage()) or b""
                await stream.send_all(data)
                self._received()
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()

    def _traces(self, request: ExportTraceServiceRequest) -> None:
        for resource_spans in request.resource_spans:
            service = str(_attributes(resource_spans.resource.attributes).get("service.name", ""))
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(Span(
                        name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(), start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano, attributes=_attributes(span.attributes),
                        status={0: "unset", 1: "ok", 2: "error"}[span.status.code],
                        service=service, scope=scope_spans.scope.name))

    def _metrics(self, request: ExportMetricsServiceRequest) -> None:
        for resource_metrics in request.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    if kind in ("sum", "gauge"):
                        data = getattr(metric, kind)
                        for point in data.data_points:
                            value = point.as_double if point.HasField("as_double") else point.as_int
                            self._point(Point(metric.name, kind, _attributes(point.attributes), value,
                                              monotonic=kind == "sum" and data.is_monotonic))
                    elif kind == "histogram":
                        for h in metric.histogram.data_points:
                            self._point(Point(metric.name, kind, _attributes(h.attributes), h.count,
                                              tuple(h.bucket_counts), tuple(h.explicit_bounds)))

    def _point(self, point: Point) -> None:
        self.metrics[(point.metric, tuple(sorted(point.attributes.items())))] = point


@asynccontextmanager
async def collector() -> AsyncIterator[Collector]:
    """A collector serving on a free loopback port for the block's duration."""
    result = Collector()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, result._serve, 0,
                                                          host="127.0.0.1"))
        result.url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        try:
            yield result
        finally:
            nursery.cancel_scope.cancel()


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return None if kind is None else getattr(value, kind)

