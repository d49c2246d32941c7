"""OpenTelemetry export and ``GET /metrics`` of a real daemon.

A real ``corral daemon`` exports to the fake OTLP/HTTP collector (``tests/fakes/otlp_collector``,
protobuf decoded with ``opentelemetry-proto``): a fake turn with a permission and a tool call
gives a ``corral.turn`` span with a ``corral.permission`` and a ``corral.tool`` child; a turn
that a crash ends is an error span with the exit's reason; the metrics arrive at the graceful
stop's flush; a native turn with two model calls (the fake model server) has a ``gen_ai`` chat
span per call, exported by the worker under the turn's propagated context. ``/metrics`` is parsed with ``prometheus_client``'s parser, with and without the
token, and public.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h11
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels
from tests.fakes.otlp_collector import Collector, Span, collector

from .daemonproc import DaemonProc, raw_client, start_daemon, stop_daemon
from .test_native_e2e import KEY
from .test_native_e2e import create_params as native_params
from .vendor_rig import daemon_session, is_kind, of

pytestmark = pytest.mark.timeout(120)


def _kind(frame: dict[str, Any]) -> str:
    return str(frame["event"]["type"])


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "corral.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


async def _turn_with_permission_and_crash(daemon: DaemonProc, cwd: Path) -> dict[str, Any]:
    """One fake session: ``/ask`` (a permission, allowed, then a bash tool call), then ``/crash``
    mid-turn and the restart. Returns what the client saw."""
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(cwd)))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        await client.ok("session.prompt", session_id=sid, text="/ask echo hi")
        asked = (await client.events_until(sid, lambda f: _kind(f) == "permission"))[-1]["event"]
        await client.ok("session.permission", session_id=sid, permission_id=asked["permission_id"],
                        decision="allow")
        first = await client.events_until(sid, lambda f: _kind(f) == "result")
        decided = next(f["event"] for f in first if _kind(f) == "permission_decided")
        await client.ok("session.prompt", session_id=sid, text="/crash")
        await client.events_until(sid, lambda f: _kind(f) == "restarted")
        await client.events_until(sid, lambda f: _kind(f) == "status" and f["event"]["state"] == "idle")
        return {"sid": sid, "by": decided["by"]}


async def test_spans_and_metrics_of_a_turn_a_permission_a_tool_and_a_crash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # the SDK's variable: spans within 0.1 s
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "300")  # metrics every 0.3 s, not 60 s
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-corral-test=yes")
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    async with collector() as otlp:
        config = _config(tmp_path, f'[telemetry]\notlp_endpoint = "{otlp.url}"\n')
        daemon = await start_daemon(tmp_path / "state", config=config)
        try:
            seen = await _turn_with_permission_and_crash(daemon, tmp_path)
            # Spans are exported while the daemon runs (the batch processor's 0.1 s delay).
            await otlp.wait_for(lambda c: len(_named(c, "corral.turn")) == 2)
            # ... and the metrics at the interval the environment asks (the default is a minute).
            await otlp.wait_for(lambda c: c.value("corral.restarts", harness="fake") == 1)
            assert otlp.value("corral.sessions", state="idle", harness="fake") == 1
        finally:
            assert await stop_daemon(daemon) == 0
        # The graceful stop flushed a last collection of the metrics.
        await otlp.wait_for(lambda c: c.value("corral.turns", harness="fake", is_error="true") == 1)

    assert all(h.get("x-corral-test") == "yes" for h in otlp.headers)
    ok, crashed = sorted(_named(otlp, "corral.turn"), key=lambda s: s.start_ns)
    assert {s.service for s in otlp.spans} == {"corral"}
    assert ok.parent_span_id == "" and ok.status == "unset"
    assert ok.attributes | {"corral.duration_ms": 0} == {
        "corral.session.id": seen["sid"], "corral.harness": "fake", "gen_ai.request.model": "fake-1",
        "corral.stop_reason": "end_turn", "corral.is_error": False, "corral.duration_ms": 0,
        "gen_ai.usage.input_tokens": ok.attributes["gen_ai.usage.input_tokens"],
        "gen_ai.usage.output_tokens": ok.attributes["gen_ai.usage.output_tokens"],
        "gen_ai.usage.cache_read.input_tokens": 0, "gen_ai.usage.cache_creation.input_tokens": 0,
    } | ({"corral.cost_usd": ok.attributes["corral.cost_usd"]} if "corral.cost_usd" in ok.attributes else {})
    assert "corral.prompt" not in ok.attributes  # capture_content is off
    children = [s for s in otlp.spans if s.parent_span_id == ok.span_id]
    assert sorted(s.name for s in children) == ["corral.permission", "corral.tool"]
    permission = next(s for s in children if s.name == "corral.permission")
    tool = next(s for s in children if s.name == "corral.tool")
    assert {s.trace_id for s in children} == {ok.trace_id}
    assert permission.attributes["corral.permission.decision"] == "allow"
    assert permission.attributes["corral.permission.by"] == seen["by"]
    assert (tool.attributes["corral.tool.name"], tool.attributes["corral.tool.kind"],
            tool.attributes["corral.tool.outcome"]) == ("bash", "exec", "ok")
    assert "corral.tool.input" not in tool.attributes
    assert ok.start_ns <= permission.start_ns <= permission.end_ns <= tool.end_ns <= ok.end_ns

    assert crashed.trace_id != ok.trace_id and crashed.status == "error"
    assert crashed.attributes["corral.is_error"] is True
    assert crashed.attributes["corral.error.code"] == "harness_crashed"
    assert (crashed.attributes["corral.exit.reason"], crashed.attributes["corral.exit.code"]) == ("crashed", 3)

    assert otlp.value("corral.turns", harness="fake", is_error="false") == 1
    assert otlp.value("corral.tool_calls", kind="exec", outcome="ok") == 1
    assert otlp.value("corral.permissions", decision="allow") == 1
    assert otlp.value("corral.restarts", harness="fake") == 1
    assert otlp.value("corral.tokens", harness="fake", type="output") == ok.attributes["gen_ai.usage.output_tokens"]
    assert (otlp.value("corral.events") or 0) > 10
    assert otlp.value("corral.sessions", state="closed", harness="fake") == 1  # closed at the stop
    assert all(p.monotonic for p in otlp.points("corral.turns"))
    delivery = otlp.points("corral.event.delivery")
    assert len(delivery) == 1 and delivery[0].value > 10 and delivery[0].bounds[:2] == (0.0005, 0.001)


async def test_a_native_turn_has_a_chat_span_per_model_call_from_the_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "corral-e2e")
    server = FakeModels([call("write", path="hello.txt", content="hello\n"),
                         say("Wrote it.", input_tokens=30, output_tokens=7)])
    async with collector() as otlp, trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        config = _config(tmp_path, f'[telemetry]\notlp_endpoint = "{otlp.url}"\n')
        params = native_params(tmp_path, "openai", port)
        async with daemon_session(tmp_path / "state", params, timeout=120, config=config,
                                  ready=is_kind("init")) as rig:
            events = await rig.turn("write hello.txt, secret prompt words")
            await otlp.wait_for(lambda c: len(_named(c, "chat fake-model")) == 2
                                and len(_named(c, "corral.turn")) == 1)
        nursery.cancel_scope.cancel()

    (result,) = of(events, "result")
    (turn,) = _named(otlp, "corral.turn")
    calls = sorted(_named(otlp, "chat fake-model"), key=lambda s: s.start_ns)
    assert turn.attributes["gen_ai.request.model"] == "openai/fake-model"
    assert turn.attributes["gen_ai.usage.input_tokens"] == result["usage"]["input_tokens"]
    assert {s.service for s in otlp.spans} == {"corral-e2e"}
    assert [(s.trace_id, s.parent_span_id, s.scope) for s in calls] == [
        (turn.trace_id, turn.span_id, "corral.native")] * 2
    assert turn.start_ns <= calls[0].start_ns <= calls[0].end_ns <= calls[1].start_ns <= calls[1].end_ns
    assert calls[1].end_ns <= turn.end_ns
    for span in calls:
        assert (span.attributes["gen_ai.operation.name"], span.attributes["gen_ai.provider.name"],
                span.attributes["gen_ai.request.model"]) == ("chat", "openai", "fake-model")
    assert (calls[1].attributes["gen_ai.usage.input_tokens"],
            calls[1].attributes["gen_ai.usage.output_tokens"]) == (30, 7)
    assert sum(s.attributes["gen_ai.usage.output_tokens"] for s in calls) == result["usage"]["output_tokens"]
    tool = next(s for s in otlp.spans if s.name == "corral.tool")
    assert (tool.parent_span_id, tool.attributes["corral.tool.name"]) == (turn.span_id, "write")
    # Neither the prompt nor the key is an attribute anywhere (capture_content is off).
    every = repr([s.attributes for s in otlp.spans])
    assert "secret prompt words" not in every and KEY not in every


async def test_metrics_over_http_need_the_token(tmp_path: Path) -> None:
    daemon = await start_daemon(tmp_path / "state")
    try:
        seen = await _turn_with_permission_and_crash(daemon, tmp_path)
        assert (await _get(daemon, "/metrics"))[0] == 401
        assert (await _get(daemon, "/metrics", token="wrong"))[0] == 401
        assert (await _get(daemon, "/metrics", token=daemon.token, host="evil.example"))[0] == 403
        status, headers, body = await _get(daemon, "/metrics", token=daemon.token)
    finally:
        assert await stop_daemon(daemon) == 0
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = _samples(body)
    assert samples[("corral_turns_total", (("harness", "fake"), ("is_error", "false")))] == 1
    assert samples[("corral_turns_total", (("harness", "fake"), ("is_error", "true")))] == 1
    assert samples[("corral_tool_calls_total", (("kind", "exec"), ("outcome", "ok")))] == 1
    assert samples[("corral_permissions_total", (("decision", "allow"),))] == 1
    assert samples[("corral_restarts_total", (("harness", "fake"),))] == 1
    assert samples[("corral_sessions", (("harness", "fake"), ("state", "idle")))] == 1
    assert samples[("corral_events_total", ())] > 10
    # Every event the client got live was measured, from its publish to its write.
    delivered = samples[("corral_event_delivery_seconds_count", ())]
    assert 10 < delivered <= samples[("corral_events_total", ())]
    assert samples[("corral_event_delivery_seconds_bucket", (("le", "+Inf"),))] == delivered
    assert 0 < samples[("corral_event_delivery_seconds_sum", ())] < delivered  # well under 1 s each
    assert seen["sid"]


async def test_public_metrics_need_no_token_but_a_loopback_host(tmp_path: Path) -> None:
    config = _config(tmp_path, "[telemetry]\nmetrics_public = true\n")
    daemon = await start_daemon(tmp_path / "state", config=config)
    try:
        status, _, body = await _get(daemon, "/metrics")
        assert (await _get(daemon, "/metrics", host="evil.example"))[0] == 403
    finally:
        assert await stop_daemon(daemon) == 0
    assert status == 200
    names = {family.name for family in text_string_to_metric_families(body)}
    assert {"corral_sessions", "corral_turns", "corral_tokens", "corral_cost_usd", "corral_tool_calls",
            "corral_permissions", "corral_restarts", "corral_events",
            "corral_event_delivery_seconds"} <= names


def _named(c: Collector, name: str) -> list[Span]:
    return [s for s in c.spans if s.name == name]


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def _get(daemon: DaemonProc, path: str, *, token: str | None = None,
               host: str | None = None) -> tuple[int, dict[str, str], str]:
    """One plain HTTP GET on the daemon's TCP port: status, headers, body."""
    headers = [("Host", host or f"127.0.0.1:{daemon.port}")]
    if token is not None:
        headers.append(("Authorization", f"Bearer {token}"))
    conn = h11.Connection(h11.CLIENT)
    with trio.fail_after(30):
        stream = await trio.open_tcp_stream("127.0.0.1", daemon.port)
        async with stream:
            await stream.send_all(conn.send(h11.Request(method="GET", target=path, headers=headers))
                                  + conn.send(h11.EndOfMessage()))
            status, answer, body = 0, {}, bytearray()
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some(65536))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                    answer = {k.decode(): v.decode() for k, v in event.headers}
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                    return status, answer, body.decode()
