"""A Codex session reaches the daemon's MCP server through the shared loopback endpoint.

A daemon with the fake stdio MCP server in its config runs a real ``codex app-server`` session
against the fake OpenAI server. Codex defers MCP tools: the scripted model searches for the tool,
then calls ``pid`` in the ``mcp__fake`` namespace; Codex sends the call to the endpoint URL
corral injected (``-c mcp_servers.…`` with the session's bearer token), and the daemon answers
from its one server process: the result is that process's pid, no server runs under Codex, and
the server started once.
"""

from __future__ import annotations

import json
from pathlib import Path

import trio

from tests.fakes.openai_server import FakeOpenAI, FunctionCall, RawItem, Text

from .daemonproc import raw_client, start_daemon, stop_daemon
from .test_codex_e2e import TIMEOUT, create_params, tool_outputs
from .test_codex_e2e import pytestmark as codex_marks
from .test_mcp_claude import _config
from .vendor_rig import Rig, cmdline, family, is_kind, marked_gone, of

pytestmark = codex_marks

SEARCH = RawItem(item={"type": "tool_search_call", "id": "tsc_1", "call_id": "search_1",
                       "status": "completed", "execution": "client",
                       "arguments": {"query": "server pid"}})


async def test_a_codex_session_calls_the_shared_server_through_the_endpoint(tmp_path: Path) -> None:
    server = FakeOpenAI([SEARCH, FunctionCall(name="pid", namespace="mcp__fake", call_id="call_pid"),
                         Text(text="Got the pid.")])
    state = tmp_path / "state"
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        daemon = await start_daemon(state, config=_config(tmp_path))
        try:
            with trio.fail_after(TIMEOUT):
                async with raw_client(daemon) as client:
                    # Warm first: Codex lists its MCP tools once, as it starts.
                    warm = (await client.ok("mcp.restart", name="fake"))["server"]
                    assert warm["state"] == "running"
                    params = create_params(tmp_path, port, permissions={
                        "mode": "auto_edit", "allow_tools": ["mcp__fake__*"]})
                    created = await client.call("session.create", timeout=TIMEOUT, **params)
                    rig = Rig(daemon, client, created["result"]["session"]["id"], tmp_path / "work",
                              TIMEOUT)
                    await client.ok("session.subscribe", session_id=rig.sid)
                    await rig.until(is_kind("init"))
                    assert await rig.prompt("which pid?") in ("prompted", "held")
                    events = await rig.until(is_kind("result"))  # allow_tools answers Codex's ask
                    [listed] = (await client.ok("mcp.list"))["servers"]
                    codex = await rig.pid()
                    under_codex = [p for p in family(codex) if "tests.fakes.mcp_server" in cmdline(p)]
        except BaseException:
            print((state / "test-daemon.out").read_text(errors="replace")[-8000:])
            raise
        finally:
            with trio.CancelScope(shield=True):
                assert await stop_daemon(daemon) == 0
        nursery.cancel_scope.cancel()
    assert (listed["pid"], under_codex) == (warm["pid"], [])
    assert any(str(warm["pid"]) in output for output in tool_outputs(server.requests[-1])), \
        json.dumps(server.requests[-1].body)[-2000:]
    assert len(list((tmp_path / "marks").glob("start-*"))) == 1
    assert of(events, "result")[0]["is_error"] is False
    assert {d["by"] for d in of(events, "permission_decided")} <= {"policy"}
    assert marked_gone(state) == []
