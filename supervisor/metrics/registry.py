"""Counters, gauges and histograms with labels, kept as plain dicts.

Each metric has an OpenTelemetry-style dotted ``name`` (``corral.turns``) and the Prometheus
name derived from it (``corral_turns_total``: dots to underscores, the unit's suffix, and
``_total`` for a counter). A series is keyed by its label values, a tuple in the order of the
metric's ``labels``. Updates happen on the trio thread; readers in other threads (the
OpenTelemetry reader) take ``snapshot()``, a ``dict.copy()``, which is atomic under the GIL.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, TypeVar

__all__ = ["Counter", "Gauge", "Histogram", "Labels", "Metric", "Registry"]

Labels = tuple[str, ...]
Kind = Literal["counter", "gauge", "histogram"]


class Metric:
    """What every metric has: its names, help text, unit and label names."""

    kind: Kind

    def __init__(self, name: str, help: str, labels: Sequence[str] = (), *, unit: str = "",
                 suffix: str = "") -> None:
        self.name = name
        """The dotted name the OpenTelemetry exporter uses (``corral.turns``)."""
        self.help = help
        self.labels = tuple(labels)
        self.unit = unit
        """The OpenTelemetry unit (``s``, ``USD``, ``{turn}``)."""
        base = name.replace(".", "_") + (f"_{suffix}" if suffix else "")
        self.prometheus_name = base + ("_total" if self.kind == "counter" else "")
        """The Prometheus name: ``suffix`` is the unit's (``seconds``, ``usd``)."""


class Counter(Metric):
    """A monotonic sum per label set."""

    kind: Kind = "counter"

    def __init__(self, name: str, help: str, labels: Sequence[str] = (), *, unit: str = "",
                 suffix: str = "") -> None:
        super().__init__(name, help, labels, unit=unit, suffix=suffix)
        self.values: dict[Labels, float] = {}

    def inc(self, labels: Labels = (), amount: float = 1) -> None:
        self.values[labels] = self.values.get(labels, 0) + amount

    def snapshot(self) -> dict[Labels, float]:
        return self.values.copy()


class Gauge(Metric):
    """A value per label set that goes up and down (set, or moved by ``add``)."""

    kind: Kind = "gauge"

    def __init__(self, name: str, help: str, labels: Sequence[str] = (), *, unit: str = "",
                 suffix: str = "") -> None:
        super().__init__(name, help, labels, unit=unit, suffix=suffix)
        self.values: dict[Labels, float] = {}

    def add(self, labels: Labels, amount: float) -> None:
        self.values[labels] = self.values.get(labels, 0) + amount

    def set(self, labels: Labels, value: float) -> None:
        self.values[labels] = value

    def snapshot(self) -> dict[Labels, float]:
        return self.values.copy()


class Histogram(Metric):
    """Observations counted into fixed buckets per label set, with their sum and count.

    ``listeners`` are called with each observation (the OpenTelemetry exporter records it in
    its own histogram, of the same bucket bounds); none are there unless one is configured.
    """

    kind: Kind = "histogram"

    def __init__(self, name: str, help: str, labels: Sequence[str] = (), *,
                 buckets: Sequence[float], unit: str = "", suffix: str = "") -> None:
        super().__init__(name, help, labels, unit=unit, suffix=suffix)
        self.buckets = tuple(sorted(buckets))
        self.values: dict[Labels, _Series] = {}
        self.listeners: list[Callable[[float, Labels], None]] = []

    def observe(self, value: float, labels: Labels = ()) -> None:
        series = self.values.get(labels)
        if series is None:
            series = self.values[labels] = _Series(len(self.buckets))
        series.counts[bisect.bisect_left(self.buckets, value)] += 1
        series.sum += value
        series.count += 1
        for listener in self.listeners:
            listener(value, labels)

    def snapshot(self) -> dict[Labels, tuple[list[int], float, int]]:
        """Per label set: the count in each bucket (not cumulative; one more for +Inf), the sum
        and the count."""
        return {labels: (list(s.counts), s.sum, s.count) for labels, s in self.values.copy().items()}


_M = TypeVar("_M", "Counter", "Gauge", "Histogram")


class _Series:
    __slots__ = ("count", "counts", "sum")

    def __init__(self, buckets: int) -> None:
        self.counts = [0] * (buckets + 1)
        self.sum = 0.0
        self.count = 0


class Registry:
    """The metrics in the order they were made; ``render`` and the exporter walk them."""

    def __init__(self) -> None:
        self._metrics: dict[str, Counter | Gauge | Histogram] = {}

    def counter(self, name: str, help: str, labels: Sequence[str] = (), *, unit: str = "",
                suffix: str = "") -> Counter:
        return self._add(Counter(name, help, labels, unit=unit, suffix=suffix))

    def gauge(self, name: str, help: str, labels: Sequence[str] = (), *, unit: str = "",
              suffix: str = "") -> Gauge:
        return self._add(Gauge(name, help, labels, unit=unit, suffix=suffix))

    def histogram(self, name: str, help: str, labels: Sequence[str] = (), *,
                  buckets: Sequence[float], unit: str = "", suffix: str = "") -> Histogram:
        return self._add(Histogram(name, help, labels, buckets=buckets, unit=unit, suffix=suffix))

    def __iter__(self) -> Iterator[Counter | Gauge | Histogram]:
        return iter(list(self._metrics.values()))

    def _add(self, metric: _M) -> _M:
        if metric.name in self._metrics:
            raise ValueError(f"metric {metric.name!r} is registered already")
        self._metrics[metric.name] = metric
        return metric
