"""Real Claude Code delegates a prompt to a corral session through ``corral mcp-server``.

``claude -p`` runs offline against the fake Anthropic server with ``corral mcp-server`` as its
MCP server ``corral`` (what ``claude mcp add corral -- corral mcp-server`` sets up). The model
(scripted) calls ``mcp__corral__corral_prompt`` on a fake session of a real daemon; the tool's
answer (the fake session's reply) reaches the model in its next request, and the model's final
text, which quotes it, is Claude's result. The daemon's log of the fake session shows the prompt.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.fakes.anthropic_server import FakeAnthropic, RecordedRequest, Reply, Scripted, ToolUse, text
from tests.fakes.claude_offline import offline_env

from .daemonproc import REPO, raw_client, start_daemon, stop_daemon
from .test_claude_e2e import _binary
from .test_claude_e2e import pytestmark as claude_marks

pytestmark = [*claude_marks, pytest.mark.timeout(240)]

TOOL = "mcp__corral__corral_prompt"


def _tool_results(request: RecordedRequest, call_id: str) -> list[str]:
    """The text of every ``tool_result`` block answering ``call_id`` in the request's messages."""
    out: list[str] = []
    for message in (request.body or {}).get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                inner = block.get("content")
                out.extend([inner] if isinstance(inner, str) else
                           [part.get("text", "") for part in inner or [] if isinstance(part, dict)])
    return out


def _script(session_id: str) -> Any:
    """Wait for the corral server if its tools are not offered yet (Claude does not wait for MCP
    servers before the first request); call the tool once; then answer with what it returned."""

    def choose(request: RecordedRequest) -> Scripted:
        results = _tool_results(request, _CALL)
        if results:
            return text(f"corral said: {json.loads(results[0])['text']}")
        tools = {t.get("name") for t in (request.body or {}).get("tools", [])}
        if TOOL in tools:
            return Reply(blocks=[ToolUse(id=_CALL, name=TOOL, input={
                "session_id": session_id, "text": "hello from claude"})])
        if _WAIT in tools and len(_tool_results(request, _WAITED)) < 3:
            return Reply(blocks=[ToolUse(id=_WAITED, name=_WAIT, input={"servers": ["corral"]})])
        return text("no corral tools")

    return choose


_CALL, _WAITED, _WAIT = "toolu_corral_prompt", "toolu_wait", "WaitForMcpServers"


async def test_claude_code_delegates_a_prompt_through_corral_mcp_server(tmp_path: Path) -> None:
    binary = _binary()
    state = tmp_path / "state"
    home = tmp_path / "home"
    work = tmp_path / "work"
    for path in (home, work):
        path.mkdir()
    daemon = await start_daemon(state)
    try:
        async with raw_client(daemon) as client, trio.open_nursery() as nursery:
            sid = (await client.ok("session.create", harness="fake", cwd=str(work)))["session"]["id"]
            server = FakeAnthropic(choose=_script(sid))
            port = await nursery.start(server.serve)
            config = tmp_path / "mcp.json"
            config.write_text(json.dumps({"mcpServers": {"corral": {
                "command": sys.executable,
                "args": ["-m", "actors.app", "mcp-server", "--state-dir", str(state)],
                "env": {"PYTHONPATH": str(REPO)}}}}))
            env = {**os.environ, **offline_env(port), "HOME": str(home),
                   "CLAUDE_CONFIG_DIR": str(home / ".claude"), "MCP_TIMEOUT": "60000"}
            with trio.fail_after(180):
                done = await trio.run_process(
                    [binary, "-p", "delegate a greeting to corral", "--output-format", "json",
                     "--mcp-config", str(config), "--strict-mcp-config", "--allowedTools", f"{TOOL},{_WAIT}"],
                    cwd=str(work), env=env, capture_stdout=True, capture_stderr=True, check=False)
            out = done.stdout.decode(errors="replace")
            assert done.returncode == 0, out + done.stderr.decode(errors="replace")
            assert json.loads(out)["result"] == "corral said: echo: hello from claude"
            [answered] = [r for r in server.message_requests if _tool_results(r, _CALL)]
            [result] = _tool_results(answered, _CALL)
            assert json.loads(result) == {"state": "idle", "text": "echo: hello from claude",
                                          "stop_reason": "end_turn", "is_error": False,
                                          "usage": json.loads(result)["usage"], "cost_usd": None}
            await client.ok("session.subscribe", session_id=sid)
            frames = await client.events_until(sid, lambda f: f["event"]["type"] == "result")
            assert {"type": "user", "text": "hello from claude", "delivery": "prompted"} in \
                [f["event"] for f in frames]
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            assert await stop_daemon(daemon) == 0
