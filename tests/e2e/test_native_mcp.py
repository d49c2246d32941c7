"""Native sessions using the daemon's MCP servers, through a real daemon.

A daemon process with ``[mcp.servers.fake]`` (the real MCP server of ``tests/fakes/mcp_server.py``,
stdio) runs native workers whose model is the fake model server of this test process; the
script makes the model call ``mcp__fake__*`` tools. Covered: a call through the daemon (tool
events of kind ``mcp``, the result back in the next model request) from a server shared with
``mcp.list``, which outlives a SIGKILL of the worker; MCP tools ask in ``auto_edit`` unless an
``allow_tools`` pattern matches; a tool added by ``list_changed`` is offered from the next model
request on; a server killed mid-call is an error result (``mcp.server_crashed``), the worker
goes on, and the restarted server answers the next call.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import trio

from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels, Recorded

from .daemonproc import REPO, wait_gone
from .test_native_e2e import create_params
from .vendor_rig import Rig, daemon_session, is_kind, of

TIMEOUT = 120


def write_config(tmp: Path, extra: str = "") -> str:
    """A config file declaring the fake MCP server as ``fake``."""
    marks = tmp / "marks"
    marks.mkdir(exist_ok=True)
    path = tmp / "corral.toml"
    args = json.dumps(["-m", "tests.fakes.mcp_server"])
    path.write_text(f"""
[mcp.servers.fake]
command = {json.dumps(sys.executable)}
args = {args}
cwd = {json.dumps(str(REPO))}
env = {{ MCP_FAKE_DIR = {json.dumps(str(marks))} }}
call_timeout = 30
{extra}
""")
    return str(path)


@asynccontextmanager
async def mcp_session(tmp: Path, server: FakeModels, **extra: Any) -> AsyncIterator[Rig]:
    """A daemon (with the fake MCP server configured) and one native session on it."""
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        async with daemon_session(tmp / "state", create_params(tmp, "openai", port, **extra),
                                  timeout=TIMEOUT, ready=is_kind("init"),
                                  config=write_config(tmp)) as rig:
            yield rig
        nursery.cancel_scope.cancel()


def offered(request: Recorded) -> set[str]:
    """The tool names a (Responses API) model request offers."""
    return {str(tool.get("name")) for tool in request.body.get("tools") or []}


def completed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for t in of(events, "tool") if t["phase"] == "completed"]


async def fake_server(rig: Rig) -> dict[str, Any]:
    [server] = (await rig.client.ok("mcp.list"))["servers"]
    assert server["name"] == "fake"
    return dict(server)


async def test_a_native_session_calls_a_shared_server_that_outlives_its_worker(tmp_path: Path) -> None:
    server = FakeModels([call("mcp__fake__echo", text="hello through the daemon"), say("Echoed."),
                         call("mcp__fake__pid"), say("Got its pid.")])
    with trio.fail_after(TIMEOUT):
        async with mcp_session(tmp_path, server) as rig:
            events = await rig.turn("echo something")
            tools = of(events, "tool")
            assert [(t["name"], t["kind"], t["phase"]) for t in tools] == [
                ("mcp__fake__echo", "mcp", "started"), ("mcp__fake__echo", "mcp", "completed")]
            assert tools[0]["input"] == {"text": "hello through the daemon"}
            assert (tools[1]["output"], tools[1]["is_error"]) == ("hello through the daemon", False)
            first, second = server.model_requests()
            assert {"mcp__fake__echo", "mcp__fake__pid", "read", "diagnostics"} <= offered(first)
            assert "hello through the daemon" in json.dumps(second.body)

            shared = await fake_server(rig)
            assert shared["state"] == "running" and "mcp__fake__echo" in shared["tools"]
            worker = await rig.pid()
            assert shared["pid"] not in [p.pid for p in psutil.Process(worker).children(recursive=True)]
            os.kill(worker, signal.SIGKILL)  # a worker's crash never kills the shared server
            await rig.until(is_kind("init"))
            assert await rig.pid() != worker
            events = await rig.turn("what is its pid")
            [done] = completed(events)
            assert (done["name"], done["output"], done["is_error"]) == \
                ("mcp__fake__pid", str(shared["pid"]), False)
            again = await fake_server(rig)
            assert (again["pid"], again["restarts"]) == (shared["pid"], 0)


async def test_mcp_tools_ask_in_auto_edit_unless_allow_tools_matches(tmp_path: Path) -> None:
    server = FakeModels([call("mcp__fake__echo", text="may I"), say("Asked first."),
                         call("mcp__fake__pid"), say("No need to ask.")])
    permissions = {"mode": "auto_edit", "allow_tools": ["mcp__fake__p*"]}
    with trio.fail_after(TIMEOUT):
        async with mcp_session(tmp_path, server, permissions=permissions) as rig:
            assert await rig.prompt("echo") == "prompted"
            [ask] = of(await rig.until(is_kind("permission")), "permission")
            assert (ask["tool"], ask["kind"], ask["input"]) == ("mcp__fake__echo", "mcp", {"text": "may I"})
            await rig.client.ok("session.permission", session_id=rig.sid,
                                permission_id=ask["permission_id"], decision="allow")
            [done] = completed(await rig.until(is_kind("result")))
            assert (done["output"], done["is_error"]) == ("may I", False)

            events = await rig.turn("pid")
            assert of(events, "permission") == []
            [done] = completed(events)
            assert (done["name"], done["is_error"]) == ("mcp__fake__pid", False)


async def test_a_tool_added_by_list_changed_is_offered_from_the_next_model_request(tmp_path: Path) -> None:
    server = FakeModels([call("mcp__fake__grow"), call("mcp__fake__extra"), say("Used the new tool.")])
    with trio.fail_after(TIMEOUT):
        async with mcp_session(tmp_path, server) as rig:
            events = await rig.turn("grow and use it")
            assert [(t["name"], t["output"], t["is_error"]) for t in completed(events)] == [
                ("mcp__fake__grow", "grown", False), ("mcp__fake__extra", "extra", False)]
            first, second, third = server.model_requests()
            assert "mcp__fake__extra" not in offered(first)
            assert "mcp__fake__extra" in offered(second) and "mcp__fake__extra" in offered(third)
            assert "mcp__fake__extra" in (await fake_server(rig))["tools"]


async def test_a_server_killed_mid_call_is_an_error_result_and_the_next_call_works(tmp_path: Path) -> None:
    server = FakeModels([call("mcp__fake__crash"), say("It crashed."),
                         call("mcp__fake__echo", text="back again"), say("It is back.")])
    with trio.fail_after(TIMEOUT):
        async with mcp_session(tmp_path, server) as rig:
            worker = await rig.pid()
            events = await rig.turn("crash it")
            [done] = completed(events)
            assert done["is_error"] is True and done["output"].startswith("[mcp.server_crashed]")
            assert of(events, "result")[0]["is_error"] is False  # the turn itself goes on
            assert "mcp.server_crashed" in json.dumps(server.model_requests()[1].body)
            now = (await fake_server(rig))["pid"]
            started = [int(p.name.split("-")[1]) for p in (tmp_path / "marks").glob("start-*")]
            assert len(started) == 2 and wait_gone([p for p in started if p != now]) == []

            events = await rig.turn("echo again")
            [done] = completed(events)
            assert (done["output"], done["is_error"]) == ("back again", False)
            assert await rig.pid() == worker  # the server's crash never touched the worker
            assert (await fake_server(rig))["restarts"] == 1
