"""The daemon's own metric registry and its Prometheus text form (``GET /metrics``).

Cheap counters, gauges and histograms kept in the daemon (``registry``), read by the Prometheus
renderer (``prometheus``) and, when telemetry is configured, by the OpenTelemetry exporter of
``actors.telemetry``: with no exporter, a metric is a dict update and nothing else.
"""

from supervisor.metrics.registry import Counter as Counter
from supervisor.metrics.registry import Gauge as Gauge
from supervisor.metrics.registry import Histogram as Histogram
from supervisor.metrics.registry import Metric as Metric
from supervisor.metrics.registry import Registry as Registry
from supervisor.metrics.prometheus import render as render
