"""One MCP server process for many sessions: 20 Claude sessions at once, and native sessions
beside a Claude session, all use the daemon's one stdio server.

Each Claude CLI reaches the server through the shared endpoint injected into its MCP config;
each native worker through its asks. The model (the fake Anthropic server choosing its reply
from the request, so that 20 concurrent conversations need no shared script; or the fake model
server for native sessions) calls ``mcp__fake__pid``, whose result is the server's own pid:
every session sees the same pid, the server started once, and ``daemon.status`` lists one
``mcp`` child.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.fakes.anthropic_server import (
    FakeAnthropic,
    RecordedRequest,
    Reply,
    ToolUse,
    text,
)
from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels

from . import test_native_e2e as native
from .daemonproc import RawClient, raw_client, start_daemon, stop_daemon
from .test_claude_e2e import create_params
from .test_claude_e2e import pytestmark as claude_marks
from .test_mcp_claude import _config
from .vendor_rig import marked_gone, of

pytestmark = [*claude_marks, pytest.mark.slow, pytest.mark.timeout(600)]

SESSIONS = 20
TIMEOUT = 480


def pid_then_done(request: RecordedRequest) -> Reply:
    """Call ``mcp__fake__pid`` when it is offered and the conversation has no result of it yet."""
    body = request.body if isinstance(request.body, dict) else {}
    offered = any(t.get("name") == "mcp__fake__pid" for t in body.get("tools") or [])
    answered = "tool_result" in json.dumps(body.get("messages") or [])
    if offered and not answered:
        return Reply(blocks=[ToolUse(name="mcp__fake__pid", input={})])
    return text("done")


async def one_turn(client: RawClient, sid: str, text_: str) -> list[dict[str, Any]]:
    """Prompt ``sid`` once it is idle; its events up to the turn's ``result``."""
    assert (await client.ok("session.prompt", session_id=sid, text=text_))["delivery"] in ("prompted", "held")
    frames = await client.events_until(
        sid, lambda f: f.get("event", {}).get("type") == "result", timeout=TIMEOUT)
    return [f["event"] for f in frames if f["type"] == "event"]


def pid_output(events: list[dict[str, Any]]) -> str:
    [done] = [e for e in of(events, "tool") if e["name"] == "mcp__fake__pid" and e["phase"] == "completed"]
    assert done["is_error"] is False, json.dumps(done)
    return json.dumps(done["output"])


async def test_twenty_claude_sessions_run_one_server_process(tmp_path: Path) -> None:
    server = FakeAnthropic(choose=pid_then_done)
    state = tmp_path / "state"
    outputs: dict[str, str] = {}
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        daemon = await start_daemon(state, config=_config(tmp_path))
        try:
            with trio.fail_after(TIMEOUT):
                async with raw_client(daemon) as client:
                    assert (await client.ok("mcp.restart", name="fake"))["server"]["state"] == "running"

                    async def run(index: int) -> None:
                        tmp = tmp_path / f"s{index}"
                        tmp.mkdir()
                        params = create_params(tmp, port, permissions={"allow_tools": ["mcp__fake__*"]})
                        async with raw_client(daemon) as own:  # one client each: events_until
                            created = await own.call("session.create", timeout=TIMEOUT, **params)
                            sid = created["result"]["session"]["id"]
                            await own.ok("session.subscribe", session_id=sid)
                            # A CLI whose MCP connection is not up yet offers no MCP tool on its
                            # first request (the model then just answers): ask again until it does
                            # (with twenty CLIs starting on a loaded machine, that can take a
                            # while: the test's deadline bounds it, not a count of turns).
                            while True:
                                events = await one_turn(own, sid, "which pid?")
                                if any(e["name"] == "mcp__fake__pid" for e in of(events, "tool")):
                                    outputs[sid] = pid_output(events)
                                    return

                    async with trio.open_nursery() as sessions:  # all 20 at once
                        for index in range(SESSIONS):
                            sessions.start_soon(run, index)
                    status = await client.ok("daemon.status")
                    [listed] = (await client.ok("mcp.list"))["servers"]
        except BaseException:
            print((state / "test-daemon.out").read_text(errors="replace")[-8000:])
            raise
        finally:
            with trio.CancelScope(shield=True):
                assert await stop_daemon(daemon) == 0
        nursery.cancel_scope.cancel()
    assert len(outputs) == SESSIONS
    assert {str(listed["pid"]) in output for output in outputs.values()} == {True}
    assert len(list((tmp_path / "marks").glob("start-*"))) == 1
    claude = [c for c in status["children"] if c["kind"] == "harness:claude"]
    assert len(claude) == SESSIONS
    assert [c["pid"] for c in status["children"] if c["kind"] == "mcp"] == [listed["pid"]]
    assert marked_gone(state) == []


async def test_two_native_sessions_and_a_claude_session_share_one_server_process(tmp_path: Path) -> None:
    anthropic = FakeAnthropic(choose=pid_then_done)
    models = FakeModels([call("mcp__fake__pid"), say("one"), call("mcp__fake__pid"), say("two")])
    state = tmp_path / "state"
    async with trio.open_nursery() as nursery:
        claude_port = await nursery.start(anthropic.serve)
        model_port = await nursery.start(models.serve)
        daemon = await start_daemon(state, config=_config(tmp_path))
        try:
            with trio.fail_after(TIMEOUT):
                async with raw_client(daemon) as client:
                    outputs = []
                    for index in range(2):
                        tmp = tmp_path / f"n{index}"
                        tmp.mkdir()
                        params = native.create_params(tmp, "openai", model_port)
                        sid = (await client.call("session.create", timeout=TIMEOUT, **params))["result"]["session"]["id"]
                        await client.ok("session.subscribe", session_id=sid)
                        outputs.append(pid_output(await one_turn(client, sid, "which pid?")))
                    tmp = tmp_path / "c"
                    tmp.mkdir()
                    params = create_params(tmp, claude_port, permissions={"allow_tools": ["mcp__fake__*"]})
                    sid = (await client.call("session.create", timeout=TIMEOUT, **params))["result"]["session"]["id"]
                    await client.ok("session.subscribe", session_id=sid)
                    outputs.append(pid_output(await one_turn(client, sid, "which pid?")))
                    [listed] = (await client.ok("mcp.list"))["servers"]
        except BaseException:
            print((state / "test-daemon.out").read_text(errors="replace")[-8000:])
            raise
        finally:
            with trio.CancelScope(shield=True):
                assert await stop_daemon(daemon) == 0
        nursery.cancel_scope.cancel()
    assert [str(listed["pid"]) in output for output in outputs] == [True, True, True]
    assert len(list((tmp_path / "marks").glob("start-*"))) == 1
    assert marked_gone(state) == []
