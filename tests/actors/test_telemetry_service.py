"""The telemetry child: off without an endpoint, a warning without the SDK, a bounded flush."""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any

import pytest
import trio
import trio.testing

from actors.telemetry import service
from actors.telemetry.config import TelemetryConfig, export_settings
from actors.telemetry.service import FLUSH_TIMEOUT, Telemetry


def test_the_endpoint_comes_from_the_key_or_the_environment() -> None:
    assert export_settings(TelemetryConfig(), {}) is None
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/", "OTEL_SERVICE_NAME": "mine"}
    from_env = export_settings(TelemetryConfig(), env)
    assert from_env is not None and (from_env.endpoint, from_env.service_name) == ("http://collector:4318", "mine")
    keyed = export_settings(TelemetryConfig(otlp_endpoint="http://127.0.0.1:4318"), env)
    assert keyed is not None and keyed.endpoint == "http://127.0.0.1:4318"
    assert export_settings(TelemetryConfig(otlp_endpoint="http://x"), {}).service_name == "corral"  # type: ignore[union-attr]
    assert export_settings(TelemetryConfig(otlp_endpoint="http://x"), {"OTEL_SDK_DISABLED": "true"}) is None


def test_off_is_no_child_and_no_native_tracing() -> None:
    telemetry = Telemetry(TelemetryConfig(), {})
    assert telemetry.children() == [] and telemetry.native_tracing() is None
    on = Telemetry(TelemetryConfig(otlp_endpoint="http://127.0.0.1:1"), {})
    assert [c.id for c in on.children()] == ["telemetry"]
    tracing = on.native_tracing()
    assert tracing is not None and tracing.settings.endpoint == "http://127.0.0.1:1"
    assert tracing.context("s-1", "openai/m") is None  # no exporter runs yet


async def test_without_the_sdk_the_daemon_goes_on_with_a_warning(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    async def missing(name: str) -> Any:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(service, "load", missing)
    telemetry = Telemetry(TelemetryConfig(otlp_endpoint="http://127.0.0.1:1"), {})
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(telemetry.run, telemetry.settings))
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert telemetry.observer.spans is None
    assert any("install 'corral[otel]'" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)


async def test_the_last_flush_is_bounded(monkeypatch: pytest.MonkeyPatch, autojump_clock: Any) -> None:
    release = threading.Event()
    entered = threading.Event()

    class Stuck:
        def __init__(self, settings: Any, registry: Any) -> None:
            self.flushed_within: float | None = None

        def shutdown(self, timeout: float) -> None:
            self.flushed_within = timeout
            entered.set()
            release.wait(30)  # a collector that never answers

    class Module:
        Exporter = Stuck

    async def fake_load(name: str) -> Any:
        return Module

    monkeypatch.setattr(service, "load", fake_load)
    telemetry = Telemetry(TelemetryConfig(otlp_endpoint="http://127.0.0.1:1"), {})
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(functools.partial(telemetry.run, telemetry.settings))
            exporter = telemetry.observer.spans
            assert isinstance(exporter, Stuck)
            started = trio.current_time()
            nursery.cancel_scope.cancel()
        assert trio.current_time() - started == FLUSH_TIMEOUT
        # the thread may start only after the bound ran out (virtual time jumps at once)
        assert await trio.to_thread.run_sync(entered.wait, 10)
        assert exporter.flushed_within == FLUSH_TIMEOUT and telemetry.observer.spans is None
    finally:
        release.set()
