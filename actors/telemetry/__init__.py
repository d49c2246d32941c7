"""corral's telemetry: metrics from every session's events, ``GET /metrics``, and (with
``corral[otel]`` and an endpoint) OpenTelemetry traces and metrics over OTLP/HTTP.

``service.Telemetry`` is what the daemon builds; ``observer`` turns events into metrics and
spans; ``otel`` (imported only when configured) is the SDK's side.
"""
