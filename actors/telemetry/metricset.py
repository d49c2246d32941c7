"""corral's metrics, by their OpenTelemetry names (Prometheus' in brackets).

* ``corral.sessions`` gauge by ``state``, ``harness`` [``corral_sessions``]
* ``corral.turns`` by ``harness``, ``is_error`` [``corral_turns_total``]: a turn is a ``result``
* ``corral.tokens`` by ``harness``, ``type`` = input/output/cache_read/cache_write
  [``corral_tokens_total``]
* ``corral.cost`` US dollars by ``harness`` [``corral_cost_usd_total``]
* ``corral.tool_calls`` by ``kind``, ``outcome`` (ok/error/incomplete) [``corral_tool_calls_total``]
* ``corral.permissions`` by ``decision`` [``corral_permissions_total``]
* ``corral.restarts`` by ``harness`` [``corral_restarts_total``]
* ``corral.events`` published [``corral_events_total``]
* ``corral.event.delivery`` histogram, seconds from an event's publish (the child's frame
  translated and logged) to its write to a client, live events only
  [``corral_event_delivery_seconds``]
"""

from __future__ import annotations

from supervisor.metrics import Counter, Gauge, Histogram, Registry

__all__ = ["DELIVERY_BUCKETS", "CorralMetrics"]

DELIVERY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
"""Seconds: an event normally reaches a client in well under a millisecond."""


class CorralMetrics:
    """The instruments, made once on ``registry``."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.sessions: Gauge = registry.gauge(
            "corral.sessions", "Sessions by state and harness.", ("state", "harness"), unit="{session}")
        self.turns: Counter = registry.counter(
            "corral.turns", "Turns ended (result events).", ("harness", "is_error"), unit="{turn}")
        self.tokens: Counter = registry.counter(
            "corral.tokens", "Tokens of the turns' results.", ("harness", "type"), unit="{token}")
        self.cost: Counter = registry.counter(
            "corral.cost", "Cost of the turns in US dollars.", ("harness",), unit="USD", suffix="usd")
        self.tool_calls: Counter = registry.counter(
            "corral.tool_calls", "Tool calls ended.", ("kind", "outcome"), unit="{call}")
        self.permissions: Counter = registry.counter(
            "corral.permissions", "Permission requests decided.", ("decision",), unit="{request}")
        self.restarts: Counter = registry.counter(
            "corral.restarts", "Harness child restarts.", ("harness",), unit="{restart}")
        self.events: Counter = registry.counter(
            "corral.events", "Session events published.", unit="{event}")
        self.delivery: Histogram = registry.histogram(
            "corral.event.delivery", "Seconds from an event's publish to its write to a client.",
            buckets=DELIVERY_BUCKETS, unit="s", suffix="seconds")
