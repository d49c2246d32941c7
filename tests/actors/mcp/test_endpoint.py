"""The shared endpoint, driven by the ``mcp`` SDK's own client over real HTTP on loopback."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
import trio
import trio.testing
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from actors.mcp.config import McpConfig
from actors.mcp.endpoint import KEEP_ALIVE, McpEndpoint
from actors.mcp.inject import harness_servers
from actors.mcp.registry import McpRegistry
from protocol.errors import ActorGone
from protocol.models import McpServer
from supervisor.server.gate import PATH, Gate

from tests.actors.mcp.support import FAKE, REPO, deps, fake_table, marks, running_registry

pytestmark = pytest.mark.timeout(60)


def _gate(port: int, host: str, headers: Sequence[tuple[bytes, bytes]]) -> str | None:
    return Gate(port).refusal(PATH, host, headers, unix=False)


@asynccontextmanager
async def serving(registry: McpRegistry) -> AsyncIterator[McpEndpoint]:
    endpoint = McpEndpoint(registry, _gate)
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        await endpoint.wanted_url(60)  # it listens once wanted
        yield endpoint
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def client_for(entry: McpServer, mode: str = "auto") -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers=entry.headers) as http:
        async with Client(streamable_http_client(entry.url or "", http_client=http), mode=mode) as client:
            yield client


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_vendor_style_client_lists_and_calls_through_the_endpoint(tmp_path: Path, mode: str) -> None:
    async with running_registry(McpConfig(servers={"fake": fake_table(tmp_path)})) as registry, \
            serving(registry):
        [entry] = await harness_servers(registry, "s1", [], {})
        async with client_for(entry, mode) as client:
            assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"echo", "pid", "hang"} <= names  # bare names: the CLI adds mcp__fake__
            result = await client.call_tool("echo", {"text": "through"})
            assert not result.is_error and result.content[0].text == "through"  # type: ignore[union-attr]
            missing = await client.call_tool("nope", {})
            assert missing.is_error and "[mcp.unknown_tool]" in missing.content[0].text  # type: ignore[union-attr]


async def test_the_endpoint_listens_only_once_a_session_has_servers_to_reach(tmp_path: Path) -> None:
    async with running_registry(McpConfig()) as registry, trio.open_nursery() as nursery:
        endpoint = McpEndpoint(registry, _gate)
        await nursery.start(endpoint.run)
        assert await harness_servers(registry, "s1", [], {}) == []  # nothing to reach: no listener
        assert endpoint.url is None and endpoint.server is None and registry.endpoint_url is None
        own = McpServer(name="fake", command=FAKE[0], args=FAKE[1:], cwd=str(REPO),
                        env={"MCP_FAKE_DIR": str(tmp_path)})
        [entry] = await harness_servers(registry, "s2", [own], {})  # the first use starts it
        assert endpoint.url is not None and entry.url == f"{endpoint.url}/fake"
        async with client_for(entry) as client:
            assert (await client.call_tool("echo", {"text": "lazy"})).content[0].text == "lazy"  # type: ignore[union-attr]
        nursery.cancel_scope.cancel()


async def test_an_endpoint_that_is_not_running_is_actor_gone(mock_clock: trio.testing.MockClock) -> None:
    mock_clock.autojump_threshold = 0
    async with running_registry(McpConfig()) as registry:
        McpEndpoint(registry, _gate)  # made, never run
        own = McpServer(name="web", url="http://127.0.0.1:9/mcp")
        with pytest.raises(ActorGone):
            await harness_servers(registry, "s1", [own], {})


async def test_two_sessions_reach_the_same_server_process(tmp_path: Path) -> None:
    async with running_registry(McpConfig(servers={"fake": fake_table(tmp_path)})) as registry, \
            serving(registry):
        [one] = await harness_servers(registry, "s1", [], {})
        [two] = await harness_servers(registry, "s2", [], {})
        assert one.headers != two.headers  # a token per session
        pids = []
        for entry in (one, two):
            async with client_for(entry) as client:
                pids.append((await client.call_tool("pid", {})).content[0].text)  # type: ignore[union-attr]
        assert pids[0] == pids[1] and len(marks(tmp_path, "start-")) == 1


async def test_a_failed_server_is_an_error_result_and_its_tools_stay_listed(tmp_path: Path) -> None:
    config = McpConfig(servers={"fake": fake_table(tmp_path)})
    async with running_registry(config, deps(policy=_no_restarts())) as registry, serving(registry):
        [entry] = await harness_servers(registry, "s1", [], {})
        async with client_for(entry) as client:
            crashed = await client.call_tool("crash", {})
            assert crashed.is_error and "[mcp.server_crashed]" in crashed.content[0].text  # type: ignore[union-attr]
            with trio.fail_after(1):
                failed = await client.call_tool("echo", {"text": "x"})
            assert failed.is_error and "[mcp.server_failed]" in failed.content[0].text  # type: ignore[union-attr]
            assert "echo" in {tool.name for tool in (await client.list_tools()).tools}


def _no_restarts() -> object:
    from supervisor.tree import RestartPolicy
    return RestartPolicy(intensity=0, period=60.0)


@pytest.mark.parametrize("token, extra, path, status", [
    (None, {}, "/mcp/fake", 401),
    ("wrong", {}, "/mcp/fake", 401),
    ("session", {}, "/mcp/other", 404),
    ("session", {}, "/elsewhere", 404),
    ("session", {"Host": "evil.example:80"}, "/mcp/fake", 403),
    ("session", {"Origin": "http://evil.example"}, "/mcp/fake", 403),
])
async def test_requests_are_gated(tmp_path: Path, token: str | None, extra: dict[str, str], path: str,
                                  status: int) -> None:
    async with running_registry(McpConfig(servers={"fake": fake_table(tmp_path)})) as registry, \
            serving(registry) as endpoint:
        [entry] = await harness_servers(registry, "s1", [], {})
        headers = dict(extra)
        if token is not None:
            headers["Authorization"] = entry.headers["Authorization"] if token == "session" else f"Bearer {token}"
        base = (endpoint.url or "").removesuffix("/mcp")
        async with httpx2.AsyncClient() as http:
            response = await http.post(base + path, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                       headers=headers)
        assert response.status_code == status


async def test_an_unbound_session_loses_access(tmp_path: Path) -> None:
    async with running_registry(McpConfig(servers={"fake": fake_table(tmp_path)})) as registry, \
            serving(registry):
        [entry] = await harness_servers(registry, "s1", [], {})
        registry.unbind("s1")
        async with httpx2.AsyncClient() as http:
            response = await http.post(entry.url or "", json={}, headers=entry.headers)
        assert response.status_code == 401


async def test_an_idle_client_connection_outlives_a_pause_between_tool_calls(
        mock_clock: trio.testing.MockClock) -> None:
    # A CLI keeps its connection to the endpoint in a pool between tool calls; hypercorn's
    # default 5 s keep-alive closed it under the client (whose next call then failed).
    clock = mock_clock  # time moves only when the test says
    async with running_registry(McpConfig()) as registry, serving(registry) as endpoint:
        stream = await trio.open_tcp_stream("127.0.0.1", endpoint.port)
        request = f"POST /mcp/fake HTTP/1.1\r\nHost: 127.0.0.1:{endpoint.port}\r\nContent-Length: 0\r\n\r\n"
        for _ in range(2):
            await stream.send_all(request.encode())
            answer = await _one_response(stream)
            assert answer.startswith(b"HTTP/1.1 401"), answer
            await trio.testing.wait_all_tasks_blocked()  # the server has gone idle: its timer runs
            clock.jump(KEEP_ALIVE - 1)  # idle for almost the whole keep-alive
            await trio.testing.wait_all_tasks_blocked()
        await stream.aclose()


async def _one_response(stream: trio.SocketStream) -> bytes:
    """One HTTP response read from ``stream`` (headers and its Content-Length body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some()
        if not chunk:
            return data  # the server closed the connection
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        body += await stream.receive_some()
    return head + b"\r\n\r\n" + body


async def test_the_endpoint_logs_no_address_line_of_its_own(tmp_path: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    # The daemon's "listening on" line is its only address line; hypercorn's "Running on
    # http://…" (a loopback port nobody types) is not logged.
    caplog.set_level(logging.INFO)
    async with running_registry(McpConfig(servers={})) as registry, serving(registry) as endpoint:
        assert endpoint.url is not None
    lines = [r.getMessage() for r in caplog.records]
    assert not [line for line in lines if "Running on" in line or str(endpoint.port) in line], lines
