"""Claude Code sessions reach the daemon's MCP servers through the shared loopback endpoint.

A daemon with one stdio MCP server in its config (``tests/fakes/mcp_server.py``) runs real
``claude`` sessions against the fake Anthropic server. The model (scripted) calls
``mcp__fake__pid``: the CLI sends it to the endpoint URL injected into its ``--mcp-config``
(with the session's bearer token), the daemon proxies it to the one shared server process. Two
sessions see the same server pid, and the server started once: one process, not one per CLI.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.fakes.anthropic_server import FakeAnthropic, Reply, ToolUse, text

from .daemonproc import REPO, raw_client, start_daemon, stop_daemon
from .test_claude_e2e import TIMEOUT, create_params
from .vendor_rig import is_kind, marked_gone, of
from .test_claude_e2e import pytestmark as claude_marks

pytestmark = [*claude_marks, pytest.mark.timeout(180)]


def _config(tmp: Path) -> str:
    marks = tmp / "marks"
    marks.mkdir()
    path = tmp / "corral.toml"
    path.write_text(f"""
[mcp.servers.fake]
command = {json.dumps(sys.executable)}
args = ["-m", "tests.fakes.mcp_server"]
cwd = {json.dumps(str(REPO))}
env = {{ MCP_FAKE_DIR = {json.dumps(str(marks))} }}
""")
    return str(path)


def _tool_outputs(events: list[dict[str, Any]], name: str) -> list[str]:
    done = [e for e in of(events, "tool") if e["name"] == name and e["phase"] == "completed"]
    return [json.dumps(e.get("output")) for e in done]


async def test_two_claude_sessions_share_one_server_process_through_the_endpoint(tmp_path: Path) -> None:
    script = [Reply(blocks=[ToolUse(name="mcp__fake__pid", input={})]), text("first done"),
              Reply(blocks=[ToolUse(name="mcp__fake__pid", input={})]), text("second done")]
    server = FakeAnthropic(script)
    state = tmp_path / "state"
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        daemon = await start_daemon(state, config=_config(tmp_path))
        try:
            pids: list[str] = []
            async with raw_client(daemon) as client:
                # Warm: a CLI that starts while the server is still starting may let the model's
                # first call through before its MCP connection is up (Claude answers "still
                # connecting"); a session's binding starts the server, this makes it certain.
                assert (await client.ok("mcp.restart", name="fake"))["server"]["state"] == "running"
                for index in range(2):
                    tmp = tmp_path / f"s{index}"
                    tmp.mkdir()
                    params = create_params(tmp, port, permissions={"allow_tools": ["mcp__fake__*"]})
                    sid = (await client.ok("session.create", **params))["session"]["id"]
                    await client.ok("session.subscribe", session_id=sid)
                    await client.events_until(sid, lambda f: f["event"] == {"type": "status", "state": "idle",
                                                                            "stalled": False}
                                              if "event" in f else False, timeout=TIMEOUT)
                    assert (await client.ok("session.prompt", session_id=sid, text="which pid?"))["delivery"] \
                        == "prompted"
                    frames = await client.events_until(
                        sid, lambda f: f.get("event", {}).get("type") == "result", timeout=TIMEOUT)
                    events = [f["event"] for f in frames]
                    [output] = _tool_outputs(events, "mcp__fake__pid")
                    pids.append(output)
                    assert of(events, "result")[0]["is_error"] is False
                [listed] = (await client.ok("mcp.list"))["servers"]
            assert listed["state"] == "running" and str(listed["pid"]) in pids[0]
            assert pids[0] == pids[1]
            assert len(list((tmp_path / "marks").glob("start-*"))) == 1
            # The tool result reached the model: the next request carries the server's pid.
            follow_up = json.dumps(server.message_requests[1].body)
            assert str(listed["pid"]) in follow_up
        except BaseException:
            print((state / "test-daemon.out").read_text(errors="replace")[-8000:])
            raise
        finally:
            with trio.CancelScope(shield=True):
                assert await stop_daemon(daemon) == 0
        assert marked_gone(state) == []
        nursery.cancel_scope.cancel()
    _ = is_kind
