"""The telemetry observer: session events in, metrics and a span tree out (no SDK, no daemon).

A recording ``SpanSink`` keeps every span with its parent, times, attributes and error, so the
rules of ``actors.telemetry.observer`` are checked on event sequences as the sessions emit them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.telemetry.metricset import CorralMetrics
from actors.telemetry.observer import Attributes, Observer
from protocol import events as ev
from supervisor.metrics import Registry


@dataclass
class Recorded:
    name: str
    start: int
    attributes: Attributes
    parent: Recorded | None
    end: int | None = None
    error: str | None = None
    children: list[Recorded] = field(default_factory=list)


class Sink:
    def __init__(self) -> None:
        self.spans: list[Recorded] = []

    def start(self, name: str, at_ns: int, attributes: Attributes, parent: Any | None) -> Recorded:
        span = Recorded(name, at_ns, dict(attributes), parent)
        if parent is not None:
            parent.children.append(span)
        self.spans.append(span)
        return span

    def end(self, span: Recorded, at_ns: int, attributes: Attributes, error: str | None) -> None:
        assert span.end is None, f"{span.name} ended twice"
        span.attributes.update(attributes)
        span.end, span.error = at_ns, error

    def traceparent(self, span: Recorded) -> str:
        return f"00-{id(span):032x}-{self.spans.index(span) + 1:016x}-01"


def observer(*, capture: bool = False) -> tuple[Observer, Sink, CorralMetrics]:
    metrics = CorralMetrics(Registry())
    obs = Observer(metrics, capture_content=capture)
    sink = Sink()
    obs.spans = sink
    return obs, sink, metrics


def feed(obs: Observer, *events: ev.Event, sid: str = "s-1", harness: str = "fake",
         start: float = 100.0) -> None:
    for n, event in enumerate(events):
        obs.observe(sid, harness, None, event, start + n)


def turns(sink: Sink) -> list[Recorded]:
    return [s for s in sink.spans if s.name == "corral.turn"]


def test_a_turn_with_a_permission_and_a_tool() -> None:
    obs, sink, metrics = observer()
    feed(obs,
         ev.Status(state="idle"), ev.User(text="do it"), ev.Status(state="running"),
         ev.Init(model="m-1"),
         ev.Permission(permission_id="p1", tool="bash", kind="exec"),
         ev.PermissionDecided(permission_id="p1", decision="allow", by="c-7", by_name="alice"),
         ev.Tool(call_id="t1", name="bash", kind="exec"),
         ev.Tool(call_id="t1", name="bash", kind="exec", phase="completed"),
         ev.Result(stop_reason="end_turn", usage=ev.Usage(input_tokens=5, output_tokens=2,
                                                        cache_read_tokens=1), cost_usd=0.25),
         ev.Status(state="idle"))
    (turn,) = turns(sink)
    permission, tool = turn.children
    assert (turn.start, turn.end, turn.error) == (101e9, 108e9, None)
    assert turn.attributes == {
        "corral.session.id": "s-1", "corral.harness": "fake", "gen_ai.request.model": "m-1",
        "corral.stop_reason": "end_turn", "corral.is_error": False, "corral.cost_usd": 0.25,
        "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 2,
        "gen_ai.usage.cache_read.input_tokens": 1, "gen_ai.usage.cache_creation.input_tokens": 0}
    assert (permission.name, permission.start, permission.end) == ("corral.permission", 104e9, 105e9)
    assert permission.attributes["corral.permission.decision"] == "allow"
    assert (permission.attributes["corral.permission.by"],
            permission.attributes["corral.permission.by_name"]) == ("c-7", "alice")
    assert (tool.name, tool.start, tool.end, tool.error) == ("corral.tool", 106e9, 107e9, None)
    assert tool.attributes == {"corral.tool.name": "bash", "corral.tool.kind": "exec",
                               "corral.tool.call_id": "t1", "corral.tool.outcome": "ok"}
    assert metrics.turns.values == {("fake", "false"): 1}
    assert metrics.tokens.values == {("fake", "input"): 5, ("fake", "output"): 2, ("fake", "cache_read"): 1}
    assert metrics.cost.values == {("fake",): 0.25}
    assert metrics.tool_calls.values == {("exec", "ok"): 1}
    assert metrics.permissions.values == {("allow",): 1}
    assert metrics.events.values == {(): 10}
    assert metrics.sessions.values == {("idle", "fake"): 1, ("running", "fake"): 0}


def test_a_crash_mid_turn_ends_the_turn_in_error_with_the_exit_and_its_open_children() -> None:
    obs, sink, metrics = observer()
    feed(obs,
         ev.User(text="go"), ev.Tool(call_id="t1", name="bash", kind="exec"),
         ev.Permission(permission_id="p1", tool="bash"),
         ev.PermissionDecided(permission_id="p1", decision="cancelled", by="session"),
         ev.Error(code="harness_crashed", message="the harness child ended during the turn"),
         ev.Result(stop_reason="error", is_error=True),
         ev.Status(state="restarting"),  # the result's state change comes before the exit
         ev.Exit(exit_code=None, signal="SIGKILL", reason="crashed"),
         ev.Restarted(attempt=1, reason="killed by SIGKILL"))
    (turn,) = turns(sink)
    tool, permission = turn.children
    assert (turn.end, turn.error) == (105e9, "the turn ended in an error")
    assert turn.attributes["corral.is_error"] is True
    assert (turn.attributes["corral.error.code"], turn.attributes["corral.exit.reason"],
            turn.attributes["corral.exit.signal"]) == ("harness_crashed", "crashed", "SIGKILL")
    assert "corral.exit.code" not in turn.attributes
    assert (tool.end, tool.error, tool.attributes["corral.tool.outcome"]) == (
        105e9, "the turn ended first", "incomplete")
    assert permission.attributes["corral.permission.decision"] == "cancelled"
    assert metrics.turns.values == {("fake", "true"): 1}
    assert metrics.tool_calls.values == {("exec", "incomplete"): 1}
    assert metrics.restarts.values == {("fake",): 1}


def test_an_errored_turn_without_an_exit_ends_at_the_next_event() -> None:
    obs, sink, _ = observer()
    feed(obs, ev.User(text="/fail"), ev.Result(stop_reason="error", is_error=True),
         ev.Status(state="idle"), ev.User(text="again"))
    first, second = turns(sink)
    assert (first.end, first.error) == (101e9, "the turn ended in an error")
    assert "corral.exit.reason" not in first.attributes
    assert (second.start, second.end) == (103e9, None)


def test_a_session_that_ends_ends_its_open_turn() -> None:
    obs, sink, metrics = observer()
    feed(obs, ev.Status(state="idle"), ev.User(text="go"), ev.Assistant(text="hi", delta=True),
         ev.Status(state="closing"), ev.Status(state="closed"))
    (turn,) = turns(sink)
    assert (turn.end, turn.error) == (104e9, "the session ended (closed)")
    assert metrics.sessions.values == {("idle", "fake"): 0, ("closing", "fake"): 0, ("closed", "fake"): 1}


def test_a_steer_joins_the_turn_and_a_lone_decision_opens_none() -> None:
    obs, sink, _ = observer()
    feed(obs, ev.PermissionDecided(permission_id="p9", decision="cancelled", by="session"),
         ev.User(text="go"), ev.User(text="and more", delivery="steered"),
         ev.Result(stop_reason="end_turn"))
    (turn,) = turns(sink)
    assert (turn.start, turn.end, turn.children) == (101e9, 103e9, [])


def test_a_turn_context_opens_the_span_that_the_prompt_then_joins() -> None:
    obs, sink, _ = observer()
    traceparent = obs.turn_context("s-1", "native", "openai/m", 99.5)
    feed(obs, ev.User(text="go"), ev.Result(stop_reason="end_turn"), harness="native")
    (turn,) = turns(sink)
    assert traceparent == sink.traceparent(turn)
    assert (turn.start, turn.end) == (99.5e9, 101e9)
    assert turn.attributes["gen_ai.request.model"] == "openai/m"


def test_a_turn_context_after_an_errored_turn_is_a_new_turn() -> None:
    obs, sink, _ = observer()
    feed(obs, ev.User(text="/fail"), ev.Result(stop_reason="error", is_error=True),
         ev.Status(state="idle"), harness="native")
    traceparent = obs.turn_context("s-1", "native", None, 110.0)
    first, second = turns(sink)
    assert (first.end, first.error) == (101e9, "the turn ended in an error")
    assert (second.start, traceparent) == (110e9, sink.traceparent(second))


def test_content_only_with_capture_content() -> None:
    for capture in (False, True):
        obs, sink, _ = observer(capture=capture)
        feed(obs, ev.User(text="the prompt"), ev.Tool(call_id="t", name="bash", input={"command": "ls"}),
             ev.Tool(call_id="t", name="bash", phase="completed"), ev.Result())
        (turn,) = turns(sink)
        (tool,) = turn.children
        assert turn.attributes.get("corral.prompt") == ("the prompt" if capture else None)
        assert tool.attributes.get("corral.tool.input") == ('{"command":"ls"}' if capture else None)


def test_without_a_sink_only_the_metrics_are_kept() -> None:
    metrics = CorralMetrics(Registry())
    obs = Observer(metrics)
    feed(obs, ev.User(text="go"), ev.Tool(call_id="t", name="read", kind="read"),
         ev.Result(is_error=True))
    assert obs.turn_context("s-1", "fake", None, 1.0) is None
    assert metrics.turns.values == {("fake", "true"): 1}
    assert metrics.tool_calls.values == {("read", "incomplete"): 1}


def test_a_broken_sink_never_fails_the_session(caplog: Any) -> None:
    obs, sink, metrics = observer()

    def broken(*args: Any) -> Any:
        raise RuntimeError("exporter bug")

    sink.start = broken  # type: ignore[method-assign]
    feed(obs, ev.User(text="go"), ev.User(text="again"))
    assert metrics.events.values == {(): 2}
    assert [r.getMessage() for r in caplog.records].count(
        "telemetry: could not observe an event of session s-1") == 1
