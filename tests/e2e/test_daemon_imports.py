"""A daemon imports only what a daemon with no session needs (the SDK stacks load on first use).

Black box: a real ``corral daemon`` runs with ``PYTHONPROFILEIMPORTTIME=1`` (``-X importtime``),
which makes the interpreter log every module it imports, in any thread, to stderr. The daemon
serves a client (status, a fake session made and closed) and is stopped gracefully; then its log
must name none of the heavy modules below. What imports one shows up in the same log.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .daemonproc import raw_client, start_daemon, stop_daemon

HEAVY = (
    # the MCP SDK, its pydantic models and transports, and the HTTP server of the MCP endpoint
    "mcp", "mcp_types", "pydantic", "pydantic_core", "anyio", "httpx2", "starlette", "sse_starlette",
    "uvicorn", "hypercorn", "h2", "hpack",
    # the model SDKs of the native harness (they run in its worker processes, never here)
    "google.adk", "google.genai", "openai", "anthropic", "httpx", "asyncio",
    # telemetry: with no OTLP endpoint configured nothing of OpenTelemetry loads (GET /metrics
    # is rendered by our own registry, not prometheus_client)
    "opentelemetry", "google.protobuf", "prometheus_client", "actors.telemetry.otel",
    # our modules that only a session of some kind needs
    "actors.mcp.connection", "actors.native.daemon.forkclient", "actors.native.cli.oneshot",
    "actors.vendors.opencode.http", "actors.notify.delivery",
    # the native driver, its translator and the services of its asks (a native session's), and
    # the package metadata reader its detection uses
    "actors.native.daemon.driver", "actors.native.daemon.translate",
    "actors.native.daemon.services", "actors.native.daemon.asks", "importlib.metadata",
    # the provider resolver and the price type (decoded with the native driver), and the
    # compaction estimator and plan (the daemon reads only [native.compaction])
    "actors.native.providers", "protocol.native", "actors.native.compaction.estimate",
    "actors.native.compaction.plan", "actors.native.compaction.sidecar",
    # the CLI's client side: `corral daemon` parses its command line without loading the other
    # commands' modules (their handlers are imported when they run)
    "supervisor.client", "supervisor.acp.agent", "supervisor.cli.sessions", "supervisor.cli.attach",
    "supervisor.cli.render", "supervisor.cli.services",
)
_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)\s*$", re.MULTILINE)


def heavy_in(log: str) -> list[str]:
    """The modules of ``HEAVY`` (or under one) that an importtime log shows were imported."""
    names = set(_LINE.findall(log))
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY))


@pytest.mark.timeout(120)
async def test_an_idle_daemon_imports_no_sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")  # inherited by the daemon only
    daemon = await start_daemon(tmp_path / "state", timeout=60)
    try:
        async with raw_client(daemon, unix=True) as client:
            assert (await client.ok("daemon.status"))["sessions"] == 0
            sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]["id"]
            await client.ok("session.close", session_id=sid)
            await client.ok("session.list")
    finally:
        assert await stop_daemon(daemon) == 0
    log = (daemon.state_dir / "test-daemon.out").read_text(errors="replace")
    # The log is there. (importtime logs import statements; a package's lazy export, loaded
    # through importlib, shows only the modules that one imports in turn.)
    assert "import time:" in log and "supervisor.server.listener" in _LINE.findall(log)
    assert heavy_in(log) == []


def test_the_check_reads_an_importtime_log() -> None:
    log = ("import time: self [us] | cumulative | imported package\n"
           "import time:       120 |        120 |   mcp_types._types\n"
           "import time:        90 |         90 | trio\n"
           "import time:        15 |         15 |     mcpx\n"
           "import time:        10 |         10 | google.adk.runners\n")
    assert heavy_in(log) == ["google.adk.runners", "mcp_types._types"]
