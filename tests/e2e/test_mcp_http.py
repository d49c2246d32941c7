"""The daemon's ``/mcp`` on its own port: the ``corral_*`` tools over streamable HTTP.

Driven by the ``mcp`` SDK's client with the daemon's bearer token, against a real daemon; a
request without the token (or with another) is ``401``, one with a foreign Origin or Host
``403``. The composition root does not load the MCP server's modules until the first request.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types
import pytest
import trio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .daemonproc import REPO, DaemonProc, raw_client, start_daemon, stop_daemon
from .test_mcp_server import TIMEOUT, call, failing

pytestmark = pytest.mark.timeout(120)

_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
_ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@asynccontextmanager
async def running(tmp_path: Path) -> AsyncIterator[DaemonProc]:
    daemon = await start_daemon(tmp_path / "state")
    try:
        yield daemon
    finally:
        with trio.CancelScope(shield=True):
            assert await stop_daemon(daemon) == 0


def _url(daemon: DaemonProc) -> str:
    return f"http://127.0.0.1:{daemon.port}/mcp"


@asynccontextmanager
async def http_client(daemon: DaemonProc, **options: Any) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {daemon.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http:
        async with Client(streamable_http_client(_url(daemon), http_client=http),
                          client_info=mcp_types.Implementation(name="e2e-http", version="1"),
                          **options) as client:
            yield client


async def _post(daemon: DaemonProc, **headers: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        return await http.post(_url(daemon), json=_INIT, headers={**_ACCEPT, **headers})


# The SDK's HTTP client leaves the generators of an SSE response (what carries the progress
# notifications) to the garbage collector when the call's stream ends; that is its cleanup, not
# the server's, and pytest reports it as an unraisable ResourceWarning.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_tools_over_http_with_the_daemon_token(tmp_path: Path, mode: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    async with running(tmp_path) as daemon, http_client(daemon, mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"corral_prompt", "corral_create_session", "corral_read_events"} <= names
        sid = (await call(client, "corral_create_session", harness="fake", cwd=str(work)))["session"]["id"]
        progress: list[str | None] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        with trio.fail_after(TIMEOUT):
            result = await client.call_tool("corral_prompt", {"session_id": sid, "text": "/tool echo over http"},
                                            progress_callback=on_progress)
        assert result.structured_content is not None and result.structured_content["is_error"] is False
        assert "tool bash completed" in progress
        answer = await call(client, "corral_prompt", session_id=sid, text="hi")
        assert answer["text"] == "echo: hi"
        assert (await failing(client, "corral_get_session", session_id="s-none")).startswith("unknown_session:")
        stopped = await call(client, "corral_prompt", session_id=sid, text="/ask echo asked")
        assert stopped["state"] == "waiting_for_permission"
        async with raw_client(daemon) as other:  # an ordinary session, decided by mcp:e2e-http
            [listed] = (await other.ok("session.list"))["sessions"]
            assert listed["id"] == sid and listed["state"] == "waiting"
            await other.ok("session.subscribe", session_id=sid)
            await call(client, "corral_decide", session_id=sid, permission_id="p1", decision="allow")
            frames = await other.events_until(sid, lambda f: f["event"]["type"] == "permission_decided")
            assert frames[-1]["event"]["by_name"] == "mcp:e2e-http"


async def test_the_token_host_and_origin_are_checked(tmp_path: Path) -> None:
    async with running(tmp_path) as daemon:
        good = f"Bearer {daemon.token}"
        assert (await _post(daemon)).status_code == 401
        assert (await _post(daemon, Authorization="Bearer not-the-token")).status_code == 401
        assert (await _post(daemon, Authorization=daemon.token)).status_code == 401
        refused = await _post(daemon, Authorization=good, Origin="http://evil.example")
        assert refused.status_code == 403 and "origin" in refused.text
        assert (await _post(daemon, Authorization=good, Host="evil.example")).status_code == 403
        assert daemon.token not in refused.text
        own = await _post(daemon, Authorization=good, Origin=f"http://127.0.0.1:{daemon.port}")
        assert own.status_code == 200 and '"serverInfo"' in own.text
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:  # the other paths are the page's
            elsewhere = await http.post(f"http://127.0.0.1:{daemon.port}/mcpx", json=_INIT,
                                        headers={**_ACCEPT, "Authorization": good})
        assert elsewhere.status_code == 405


def test_the_daemon_does_not_load_the_mcp_server_until_asked() -> None:
    code = ("import sys, actors.app; "
            "print(sorted(m for m in sys.modules if m.startswith('supervisor.mcpserver.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['supervisor.mcpserver.front']"
