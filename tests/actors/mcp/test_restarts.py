"""The actor's restart and failure rules on a virtual clock, with an in-memory server.

The connector is replaced by one that either refuses (a server that cannot start) or connects
an SDK ``Client`` to an in-process ``MCPServer``: no process, so time is ``MockClock``'s and the
backoff is asserted to the instant.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.server.mcpserver import MCPServer

from actors.mcp.actor import ActorDeps, McpActor
from actors.mcp.config import McpServerConfig, definition_of
from actors.mcp.connection import Connection
from protocol.errors import McpServerFailed, McpStartFailed

from tests.actors.mcp.support import POLICY

server = MCPServer("memory")


@server.tool()
async def echo(text: str) -> str:
    """Echo (async: a sync tool would run in a thread, on real time)."""
    return text


class Switch:
    """A connector that refuses while ``refuse`` is set, counting every attempt and its time."""

    def __init__(self) -> None:
        self.refuse = True
        self.attempts: list[float] = []

    @asynccontextmanager
    async def __call__(self, definition: Any, *, message_handler: Any, **_: Any) -> AsyncIterator[Connection]:
        self.attempts.append(trio.current_time())
        if self.refuse:
            raise OSError("connection refused")
        async with Client(server, mode="legacy", message_handler=message_handler) as client:
            yield Connection(client, None)


def _actor(switch: Switch) -> McpActor:
    definition = definition_of("mem", McpServerConfig(url="http://memory.invalid/mcp"))
    return McpActor("mem", definition, ActorDeps(policy=POLICY, ledger=None, connector=switch))


async def test_restarts_follow_the_policy_then_fail_until_restart(autojump_clock: trio.testing.MockClock) -> None:
    switch = Switch()
    actor = _actor(switch)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run)
        with pytest.raises(McpServerFailed):
            await actor.call("echo", {"text": "x"}, timeout=100)
        # First restart at once, then 0.2 s, then 0.4 s (no jitter); the fourth failure is one too many.
        assert switch.attempts == pytest.approx([0.0, 0.0, 0.2, 0.6])
        assert actor.state == "failed" and actor.restarts == 3
        failed_at = trio.current_time()
        assert failed_at == pytest.approx(0.6)
        assert actor.last_error == "OSError: connection refused"
        with pytest.raises(McpServerFailed):
            await actor.call("echo", {"text": "x"})
        assert trio.current_time() == failed_at  # failed fast: no wait at all
        await trio.sleep(1000)
        assert len(switch.attempts) == 4  # nothing runs while failed
        switch.refuse = False
        info = await actor.restart()
        assert info.state == "running" and (await actor.call("echo", {"text": "back"})).text() == "back"
        assert info.restarts == 4 and len(switch.attempts) == 5
        nursery.cancel_scope.cancel()


async def test_crashes_age_out_of_the_period(autojump_clock: trio.testing.MockClock) -> None:
    switch = Switch()
    switch.refuse = False
    actor = _actor(switch)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run)
        await actor.list_tools()
        for _ in range(3):  # three crashes close together: restarted at once, then after 0.2 and 0.4 s
            await _crash(actor)
        await trio.sleep(100)  # ... and long after, a crash is the first of its period again
        await _crash(actor)
        assert actor.state == "running" and actor.restarts == 4
        assert switch.attempts == pytest.approx([0.0, 0.0, 0.2, 0.6, 100.6])
        nursery.cancel_scope.cancel()


async def _crash(actor: McpActor) -> None:
    live = actor._live
    assert live is not None
    live.lose("boom")
    with trio.fail_after(10):
        while actor._live is live or actor.state != "running":
            await actor._changed.wait()


async def test_a_call_waiting_for_a_start_is_bounded_by_its_timeout(autojump_clock: trio.testing.MockClock) -> None:
    switch = Switch()
    actor = McpActor("mem", definition_of("mem", McpServerConfig(url="http://memory.invalid/mcp")),
                     ActorDeps(policy=POLICY.__class__(intensity=100, period=60.0, backoff=POLICY.backoff),
                               ledger=None, connector=switch))
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run)
        with pytest.raises(McpStartFailed):
            await actor.call("echo", {"text": "x"}, timeout=5)
        assert trio.current_time() == pytest.approx(5) and actor.state == "starting"
        nursery.cancel_scope.cancel()
