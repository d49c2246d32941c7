"""The registry in Prometheus' text exposition format (version 0.0.4), for ``GET /metrics``.

Counters, gauges and histograms as Prometheus defines them: ``# HELP`` and ``# TYPE`` lines,
one sample per label set, a histogram's cumulative ``_bucket{le=…}`` series (ending at ``+Inf``)
with its ``_sum`` and ``_count``. Label values are escaped as the format asks.
"""

from __future__ import annotations

from supervisor.metrics.registry import Counter, Gauge, Histogram, Labels, Registry

__all__ = ["CONTENT_TYPE", "render"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def render(registry: Registry) -> bytes:
    """Every metric of ``registry``, one block each, as UTF-8 text."""
    lines: list[str] = []
    for metric in registry:
        name = metric.prometheus_name
        lines.append(f"# HELP {name} {_escape_help(metric.help)}")
        lines.append(f"# TYPE {name} {metric.kind}")
        if isinstance(metric, (Counter, Gauge)):
            for labels, value in sorted(metric.snapshot().items()):
                lines.append(f"{name}{_labels(metric.labels, labels)} {_number(value)}")
        elif isinstance(metric, Histogram):
            for labels, (counts, total, count) in sorted(metric.snapshot().items()):
                cumulative = 0
                for bound, n in zip((*metric.buckets, float("inf")), counts):
                    cumulative += n
                    le = _labels((*metric.labels, "le"), (*labels, _number(bound)))
                    lines.append(f"{name}_bucket{le} {cumulative}")
                lines.append(f"{name}_sum{_labels(metric.labels, labels)} {_number(total)}")
                lines.append(f"{name}_count{_labels(metric.labels, labels)} {count}")
    return ("\n".join(lines) + "\n").encode()


def _labels(names: tuple[str, ...], values: Labels) -> str:
    if not names:
        return ""
    pairs = ",".join(f'{n}="{_escape_value(v)}"' for n, v in zip(names, values))
    return "{" + pairs + "}"


def _number(value: float) -> str:
    if value == float("inf"):
        return "+Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
