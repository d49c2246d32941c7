"""The editor's shapes as corral's and corral's answers as ACP's (``supervisor.acp.convert``),
with every answer checked against the SDK's schema (exactly: nothing dropped on validation)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from acp import schema

from protocol.models import McpServer, SessionInfo, WorkspaceSpec
from tests.supervisor.acp.kept import assert_kept
from supervisor.acp import schema as s
from supervisor.acp.convert import UnsupportedContent, mcp_servers, prompt_text, session_result, worktree

INFO = SessionInfo(id="s-0123456789ab", name="n", harness="claude", cwd="/w", model="sonnet",
                   state="idle", created_at="2026-01-01T00:00:00.000Z", last_seq=4, restarts=0,
                   pid=None, permissions="auto_edit")


def exactly(model: Any, message: msgspec.Struct) -> dict[str, Any]:
    data = json.loads(msgspec.json.encode(message))
    assert_kept(data, model.model_validate(data).model_dump(by_alias=True, mode="json"))
    return data


def test_the_editors_mcp_servers_become_the_sessions() -> None:
    given = msgspec.json.decode(json.dumps([
        {"name": "fs", "command": "mcp-fs", "args": ["--root", "/w"], "env": [{"name": "K", "value": "V"}]},
        {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": [{"name": "A", "value": "b"}]},
        {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
    ]), type=list[s.McpServer])
    assert mcp_servers(given) == [
        McpServer(name="fs", command="mcp-fs", args=["--root", "/w"], env={"K": "V"}),
        McpServer(name="web", url="http://127.0.0.1:9/mcp", headers={"A": "b"})]


def test_prompt_blocks_become_one_text() -> None:
    assert prompt_text([{"type": "text", "text": "look at"},
                        {"type": "resource", "resource": {"uri": "file:///w/a.py", "text": "x = 1"}},
                        {"type": "resource_link", "uri": "file:///w/b.py", "name": "b.py"}]) == (
        'look at\n\n<context uri="file:///w/a.py">\nx = 1\n</context>\n\n[b.py](file:///w/b.py)')
    with pytest.raises(UnsupportedContent):
        prompt_text([{"type": "image", "data": "", "mimeType": "image/png"}])


def test_worktree_meta() -> None:
    assert worktree(True) == WorkspaceSpec(mode="worktree")
    assert worktree({"branch": "b"}) == WorkspaceSpec(mode="worktree", branch="b")
    assert worktree(None) is None and worktree(False) is None


def test_session_results_offer_the_modes_and_models() -> None:
    data = exactly(schema.NewSessionResponse, session_result(INFO, ["sonnet", "opus"], with_id=True))
    assert data["sessionId"] == INFO.id and data["modes"]["currentModeId"] == "auto_edit"
    options = {o["id"]: o for o in data["configOptions"]}
    assert options["mode"]["currentValue"] == "auto_edit" and options["mode"]["category"] == "mode"
    assert [c["value"] for c in options["model"]["options"]] == ["sonnet", "opus"]
    loaded = exactly(schema.LoadSessionResponse, session_result(
        msgspec.structs.replace(INFO, model=None), [], with_id=False))
    assert "sessionId" not in loaded and [o["id"] for o in loaded["configOptions"]] == ["mode"]
    exactly(schema.ResumeSessionResponse, session_result(INFO, [], with_id=False))


def test_the_other_answers_fit_the_schema() -> None:
    exactly(schema.InitializeResponse, s.InitializeResult(
        protocol_version=1, agent_info=s.AgentInfo(name="corral", title="corral", version="0.1.0"),
        agent_capabilities=s.AgentCapabilities(
            load_session=True, prompt_capabilities=s.PromptCapabilities(embedded_context=True),
            mcp_capabilities=s.McpCapabilities(http=True),
            session_capabilities=s.SessionCapabilities(list={}, resume={}, close={}))))
    exactly(schema.ListSessionsResponse, s.ListResult(sessions=[s.ListedSession(
        session_id="s-1", cwd="/w", title="n", updated_at="2026-01-01T00:00:00.000Z", meta={"corral": {}})]))
    exactly(schema.PromptResponse, s.PromptResult(stop_reason="cancelled"))
    exactly(schema.RequestPermissionRequest, s.PermissionParams(
        session_id="s-1", tool_call=s.ToolCallRef(tool_call_id="p1", title="bash: ls", kind="execute",
                                                  status="pending", raw_input={"command": "ls"},
                                                  locations=[s.Location(path="/w")]),
        options=[s.PermissionOption(option_id="allow_once", name="Allow", kind="allow_once")]))
