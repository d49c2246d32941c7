"""An MCP server over streamable HTTP: a connection the actor reconnects after it breaks."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from actors.mcp.config import McpServerConfig, definition_of
from protocol.errors import McpServerCrashed, McpStartFailed
from supervisor.tree import Backoff, RestartPolicy

from tests.actors.mcp.support import FAKE, REPO, deps, running_actor, wait_for

pytestmark = pytest.mark.timeout(90)


@asynccontextmanager
async def http_server(port: int = 0) -> AsyncIterator[tuple[trio.Process, int]]:
    """The fake server in ``--http`` mode (a process of the test, not of the actor)."""
    process = await trio.lowlevel.open_process([*FAKE, "--http", "--port", str(port)], cwd=str(REPO),
                                               stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        line = b""
        with trio.fail_after(30):
            while not line.endswith(b"\n"):
                line += await process.stdout.receive_some(1)
        yield process, int(line.split()[1])
    finally:
        process.kill()
        await process.wait()


async def test_calls_over_http_and_a_reconnect_after_the_server_came_back() -> None:
    patient = RestartPolicy(intensity=1000, period=60.0, backoff=Backoff(initial=0.2, max=0.5, jitter=0.0))
    async with http_server() as (process, port):
        definition = definition_of("web", McpServerConfig(url=f"http://127.0.0.1:{port}/mcp",
                                                          headers={"X-Test": "1"}))
        async with running_actor(definition, deps(policy=patient)) as actor:
            assert (await actor.call("echo", {"text": "over http"})).text() == "over http"
            assert actor.info().transport == "http" and actor.pid is None
            process.kill()
            await process.wait()
            # The break is seen by the call itself, or first by the connection (then the call
            # waits for a reconnect that cannot happen yet): either way a typed error.
            with pytest.raises((McpServerCrashed, McpStartFailed)):
                await actor.call("echo", {"text": "dead"}, timeout=2)
            await wait_for(lambda: actor.state == "starting" and actor.restarts >= 1)
            async with http_server(port):
                assert (await actor.call("echo", {"text": "back"}, timeout=30)).text() == "back"
            assert actor.state in ("running", "starting") and actor.last_error
