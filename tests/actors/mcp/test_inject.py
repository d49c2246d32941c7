"""The shared endpoint's entries as the vendor launch builders render them."""

from __future__ import annotations

import json

from actors.harness import HarnessRequest
from actors.vendors.claude.launch import build_launch as claude_launch
from actors.vendors.codex.launch import build_launch as codex_launch
from protocol.models import McpServer

ENTRY = McpServer(name="fs", url="http://127.0.0.1:4321/mcp/fs", headers={"Authorization": "Bearer tok-123"})


def _request(tmp: str) -> HarnessRequest:
    return HarnessRequest(session_id="s-1", cwd=tmp, work_dir=tmp, mcp_servers=[ENTRY])


def test_claude_gets_an_http_entry_with_the_bearer_header_in_a_private_file(tmp_path: object) -> None:
    launch = claude_launch(_request(str(tmp_path)))
    path = launch.argv[launch.argv.index("--mcp-config") + 1]
    assert json.loads(launch.files[path]) == {"mcpServers": {"fs": {
        "type": "http", "url": ENTRY.url, "headers": {"Authorization": "Bearer tok-123"}}}}
    assert "--strict-mcp-config" in launch.argv and "tok-123" not in " ".join(launch.argv)


def test_codex_gets_the_url_and_the_token_through_the_environment(tmp_path: object) -> None:
    launch = codex_launch(_request(str(tmp_path)))
    assert f'mcp_servers.fs.url="{ENTRY.url}"' in launch.argv
    assert 'mcp_servers.fs.bearer_token_env_var="CORRAL_MCP_FS_BEARER_TOKEN"' in launch.argv
    assert launch.env["CORRAL_MCP_FS_BEARER_TOKEN"] == "tok-123"
    assert "tok-123" not in " ".join(launch.argv)
