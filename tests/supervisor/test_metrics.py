"""The metric registry, its Prometheus text (read back with ``prometheus_client``'s parser), and
the ``/metrics`` route's checks (token, public, Host and Origin, method)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from supervisor.metrics import Registry, render
from supervisor.server.metrics import MetricsRoute


def _registry() -> Registry:
    registry = Registry()
    turns = registry.counter("corral.turns", "Turns ended.", ("harness", "is_error"))
    turns.inc(("fake", "false"))
    turns.inc(("fake", "false"))
    turns.inc(('we"ird\\name\n', "true"))
    cost = registry.counter("corral.cost", "Cost.", ("harness",), unit="USD", suffix="usd")
    cost.inc(("claude",), 0.125)
    sessions = registry.gauge("corral.sessions", "Sessions.", ("state", "harness"))
    sessions.add(("idle", "fake"), 2)
    sessions.add(("idle", "fake"), -1)
    delivery = registry.histogram("corral.event.delivery", "Delivery.", buckets=(0.001, 0.01),
                                  unit="s", suffix="seconds")
    for value in (0.0005, 0.001, 0.002, 5.0):
        delivery.observe(value)
    return registry


def test_the_text_format_reads_back_with_prometheus_client() -> None:
    families = {f.name: f for f in text_string_to_metric_families(render(_registry()).decode())}
    assert {name: f.type for name, f in families.items()} == {
        "corral_turns": "counter", "corral_cost_usd": "counter", "corral_sessions": "gauge",
        "corral_event_delivery_seconds": "histogram"}
    turns = {tuple(sorted(s.labels.items())): s.value for s in families["corral_turns"].samples}
    assert turns == {(("harness", "fake"), ("is_error", "false")): 2,
                     (("harness", 'we"ird\\name\n'), ("is_error", "true")): 1}
    assert [(s.name, s.value) for s in families["corral_cost_usd"].samples] == [("corral_cost_usd_total", 0.125)]
    assert [(s.labels, s.value) for s in families["corral_sessions"].samples] == [
        ({"state": "idle", "harness": "fake"}, 1)]
    histogram = {(s.name, s.labels.get("le")): s.value for s in families["corral_event_delivery_seconds"].samples}
    assert histogram == {  # bounds are inclusive (le), the buckets cumulative
        ("corral_event_delivery_seconds_bucket", "0.001"): 2,
        ("corral_event_delivery_seconds_bucket", "0.01"): 3,
        ("corral_event_delivery_seconds_bucket", "+Inf"): 4,
        ("corral_event_delivery_seconds_sum", None): 5.0035,
        ("corral_event_delivery_seconds_count", None): 4}


def test_a_metric_name_is_registered_once() -> None:
    registry = Registry()
    registry.counter("corral.events", "Events.")
    with pytest.raises(ValueError, match="corral.events"):
        registry.gauge("corral.events", "Again.")


def test_a_histogram_tells_its_listeners() -> None:
    registry = Registry()
    histogram = registry.histogram("h", "H.", ("a",), buckets=(1.0,))
    seen: list[tuple[float, tuple[str, ...]]] = []
    histogram.listeners.append(lambda value, labels: seen.append((value, labels)))
    histogram.observe(0.5, ("x",))
    assert seen == [(0.5, ("x",))]
    assert histogram.snapshot() == {("x",): ([1, 0], 0.5, 1)}


def _route(*, public: bool = False) -> MetricsRoute:
    route = MetricsRoute(_registry(), lambda: 7433, lambda: "tok", public=public,
                         extra_origins=["http://localhost:3000"])
    route._token = "tok"  # what __call__ reads (in a thread) before the first answer
    return route


@pytest.mark.parametrize(("method", "host", "headers", "public", "status"), [
    ("GET", "127.0.0.1:7433", [(b"authorization", b"Bearer tok")], False, 200),
    ("GET", "localhost", [(b"Authorization", b"bearer tok")], False, 200),
    ("GET", "127.0.0.1:7433", [], False, 401),
    ("GET", "127.0.0.1:7433", [(b"authorization", b"Bearer nope")], False, 401),
    ("GET", "127.0.0.1:7433", [(b"authorization", b"Basic tok")], False, 401),
    ("GET", "127.0.0.1:7433", [], True, 200),
    ("GET", "evil.example", [(b"authorization", b"Bearer tok")], False, 403),
    ("GET", "evil.example", [], True, 403),
    ("GET", "127.0.0.1", [(b"origin", b"http://evil.example"), (b"authorization", b"Bearer tok")], True, 403),
    ("GET", "127.0.0.1", [(b"origin", b"http://localhost:3000")], True, 200),
    ("POST", "127.0.0.1", [(b"authorization", b"Bearer tok")], False, 405),
])
def test_the_route_checks(method: str, host: str, headers: list[tuple[bytes, bytes]], public: bool,
                          status: int) -> None:
    reply = _route(public=public).respond(method, host, headers)
    assert reply.status == status
    if status == 200:
        assert reply.content_type.startswith("text/plain; version=0.0.4")
        assert b"corral_turns_total" in reply.body
    else:
        assert b"corral_" not in reply.body
