"""An MCP server actor against the real fake server (``tests/fakes/mcp_server.py``) over stdio.

Real processes, so real time with generous bounds; the restart planner's timing itself is
pinned with a virtual clock in ``test_restarts.py``.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil
import pytest
import trio

from actors.mcp.config import McpServerConfig, definition_of
from protocol.errors import (
    McpCallTimeout,
    McpServerCrashed,
    McpServerFailed,
    McpUnknownTool,
)
from supervisor.ledger import Ledger

from tests.actors.mcp.support import deps, fake_definition, marks, running_actor, wait_for

pytestmark = pytest.mark.timeout(60)

TOOLS = {"echo", "pid", "crash", "hang", "grow", "big"}


async def test_lazy_start_then_list_and_call(tmp_path: Path) -> None:
    async with running_actor(fake_definition(tmp_path)) as actor:
        assert actor.state == "idle" and actor.pid is None and marks(tmp_path, "start-") == []
        tools = await actor.list_tools()
        assert {t.tool for t in tools} == TOOLS and actor.state == "running"
        assert {t.name for t in tools} == {f"mcp__fake__{t}" for t in TOOLS}
        outcome = await actor.call("echo", {"text": "hello"})
        assert outcome.text() == "hello" and not outcome.is_error
        assert (await actor.call("pid")).text() == str(actor.pid)
        assert actor.info().tools == sorted(actor.info().tools, key=list(actor.info().tools).index)
        assert len(marks(tmp_path, "start-")) == 1


async def test_a_server_killed_mid_call_fails_the_call_typed_and_is_restarted(tmp_path: Path) -> None:
    async with running_actor(fake_definition(tmp_path)) as actor:
        first = int((await actor.call("pid")).text())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_kill_when_busy, tmp_path, first)
            with pytest.raises(McpServerCrashed) as caught, trio.fail_after(10):
                await actor.call("hang", {"tag": "k"})
        assert "SIGKILL" in caught.value.message
        second = int((await actor.call("pid", timeout=20)).text())
        assert second != first and not psutil.pid_exists(first)
        assert actor.restarts == 1 and "SIGKILL" in (actor.last_error or "")


async def _kill_when_busy(directory: Path, pid: int) -> None:
    await trio.sleep(0.3)  # the call is in flight: the server only answers hang by cancellation
    os.kill(pid, signal.SIGKILL)


async def test_past_the_intensity_the_server_fails_fast_until_restarted(tmp_path: Path) -> None:
    async with running_actor(fake_definition(tmp_path)) as actor:
        for _ in range(3):  # three crashes are restarted (immediately, then with backoff) ...
            with pytest.raises(McpServerCrashed):
                await actor.call("crash", timeout=20)
        with pytest.raises(McpServerCrashed):  # ... the fourth is one too many
            await actor.call("crash", timeout=20)
        await wait_for(lambda: actor.state == "failed")
        assert actor.pid is None and len(marks(tmp_path, "start-")) == 4
        assert {t.tool for t in actor.tool_infos()} == TOOLS  # its tools stay listed
        started = trio.current_time()
        with pytest.raises(McpServerFailed) as caught:
            await actor.call("echo", {"text": "x"})
        assert trio.current_time() - started < 1.0
        assert caught.value.code.value == "mcp.server_failed"
        info = await actor.restart()
        assert info.state == "running" and info.pid is not None
        assert (await actor.call("echo", {"text": "back"})).text() == "back"


async def test_a_hung_call_times_out_and_the_server_sees_the_cancellation(tmp_path: Path) -> None:
    async with running_actor(fake_definition(tmp_path)) as actor:
        await actor.list_tools()
        with pytest.raises(McpCallTimeout):
            await actor.call("hang", {"tag": "t1"}, timeout=0.5)
        await wait_for(lambda: marks(tmp_path, "cancelled-") == ["cancelled-t1"])
        assert actor.state == "running" and (await actor.call("echo", {"text": "ok"})).text() == "ok"


async def test_a_cancelled_caller_cancels_the_call_on_the_server(tmp_path: Path) -> None:
    async with running_actor(fake_definition(tmp_path)) as actor:
        await actor.list_tools()
        with trio.move_on_after(0.5):
            await actor.call("hang", {"tag": "t2"}, timeout=30)
        await wait_for(lambda: marks(tmp_path, "cancelled-") == ["cancelled-t2"])


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_list_changed_shows_the_new_tool(tmp_path: Path, mode: str) -> None:
    async with running_actor(fake_definition(tmp_path), deps(mode=mode)) as actor:
        await actor.list_tools()
        live = actor._live
        assert live is not None
        assert live.client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        assert (await actor.call("grow")).text() == "grown"
        await wait_for(lambda: "extra" in {t.tool for t in actor.tool_infos()})
        assert (await actor.call("extra")).text() == "extra"


async def test_allow_list_and_unknown_tools(tmp_path: Path) -> None:
    async with running_actor(fake_definition(tmp_path)) as actor:
        assert {t.tool for t in await actor.list_tools(allow=frozenset({"echo"}))} == {"echo"}
        with pytest.raises(McpUnknownTool):
            await actor.call("pid", allow=frozenset({"echo"}))
        with pytest.raises(McpUnknownTool):
            await actor.call("nope")


async def test_results_are_bounded(tmp_path: Path) -> None:
    async with running_actor(fake_definition(tmp_path), deps(max_result_bytes=4096)) as actor:
        outcome = await actor.call("big", {"n": 200_000})
        assert outcome.truncated and len(outcome.text()) < 4096


async def test_the_server_has_a_ledger_row_and_its_group_is_gone_after_stop(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "state")
    async with running_actor(fake_definition(tmp_path / "m"), deps(ledger)) as actor:
        pid = int((await actor.call("pid")).text())
        rows = ledger.rows()
        assert [(r.kind, r.pid) for r in rows] == [("mcp", pid)] and rows[0].pgid == pid
    assert not psutil.pid_exists(pid) and ledger.rows() == []


async def test_a_server_that_never_starts_fails_with_its_exit_status(tmp_path: Path) -> None:
    async with running_actor(fake_definition(tmp_path, "--exit-at-start")) as actor:
        with pytest.raises(McpServerFailed):
            await actor.call("echo", {"text": "x"}, timeout=30)
        assert actor.state == "failed" and "status 3" in (actor.last_error or "")
        assert len(marks(tmp_path, "start-")) == 4


async def test_a_slow_start_is_bounded_by_startup_timeout(tmp_path: Path) -> None:
    definition = fake_definition(tmp_path, "--slow-start", "30", startup_timeout=0.5)
    async with running_actor(definition, deps(policy=_once())) as actor:
        with pytest.raises(McpServerFailed):
            await actor.call("echo", {"text": "x"}, timeout=30)
        assert "did not start within 0.5 s" in (actor.last_error or "")


async def test_a_missing_command_is_a_start_failure(tmp_path: Path) -> None:
    definition = definition_of("nope", McpServerConfig(command=str(tmp_path / "missing")))
    async with running_actor(definition, deps(policy=_once())) as actor:
        assert await actor.list_tools() == [] and actor.state == "failed"
        assert actor.last_error


def _once() -> object:
    from supervisor.tree import RestartPolicy
    return RestartPolicy(intensity=0, period=60.0)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_listing_right_after_list_changed_has_the_new_tool(tmp_path: Path, mode: str) -> None:
    """What the native agent's next model request relies on: no waiting by the caller."""
    async with running_actor(fake_definition(tmp_path), deps(mode=mode)) as actor:
        await actor.list_tools()
        assert (await actor.call("grow")).text() == "grown"
        assert "extra" in {t.tool for t in await actor.list_tools()}
