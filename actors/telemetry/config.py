"""Section ``[telemetry]`` of the configuration, and where the exporter's settings come from.

OpenTelemetry is on when ``otlp_endpoint`` is set or the standard ``OTEL_EXPORTER_OTLP_ENDPOINT``
variable is (the key wins when both are); both name the base URL to which ``/v1/traces`` and
``/v1/metrics`` are appended. ``OTEL_SDK_DISABLED=true`` turns it off whatever is set. The
service name is ``OTEL_SERVICE_NAME``, by default ``corral``. The SDK itself reads
``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_BSP_*`` and ``OTEL_METRIC_EXPORT_INTERVAL``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from msgspec import Meta, Struct

__all__ = ["ExportSettings", "TelemetryConfig", "export_settings"]

_Url = Annotated[str, Meta(pattern="^(https?://[^ ]+)?$", description="an http(s) base URL, or empty")]


class TelemetryConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[telemetry]``: OpenTelemetry export (needs ``corral[otel]``) and ``/metrics``."""

    otlp_endpoint: _Url = ""  # OTLP/HTTP base URL, e.g. http://127.0.0.1:4318; empty: off
    capture_content: bool = False  # prompt text and tool input as span attributes
    metrics_public: bool = False  # GET /metrics without the daemon's bearer token


class ExportSettings(Struct, frozen=True, kw_only=True):
    """What the OpenTelemetry exporter is built with."""

    endpoint: str
    """The base URL; the traces go to ``endpoint/v1/traces``, the metrics to ``…/v1/metrics``."""
    service_name: str = "corral"
    capture_content: bool = False


def export_settings(config: TelemetryConfig, environ: Mapping[str, str]) -> ExportSettings | None:
    """The exporter's settings, or ``None`` when no endpoint is configured (telemetry off)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    endpoint = config.otlp_endpoint or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not endpoint:
        return None
    return ExportSettings(endpoint=endpoint.rstrip("/"),
                          service_name=environ.get("OTEL_SERVICE_NAME", "").strip() or "corral",
                          capture_content=config.capture_content)
