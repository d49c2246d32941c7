"""The pure Claude launch builder: argv, env and files from a ``HarnessRequest``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.harness import HarnessRequest
from actors.vendors.claude.launch import BASE_ARGS, MCP_CONFIG_FILE, build_launch, mcp_config
from protocol.errors import BadRequest
from protocol.models import McpServer, Permissions

SECRET = "sk-ant-very-secret"


def request(**fields: Any) -> HarnessRequest:
    return HarnessRequest(session_id="s-1", cwd="/work", work_dir="/state/s-1/harness", **fields)


def test_the_minimal_launch() -> None:
    launch = build_launch(request())
    assert launch.argv == ["claude", *BASE_ARGS, "--permission-mode", "default"]
    assert BASE_ARGS == ("-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                         "--include-partial-messages", "--replay-user-messages", "--permission-prompt-tool", "stdio")
    assert launch.cwd == "/work"
    assert launch.env == {"CLAUDECODE": ""}
    assert launch.files == {}
    assert launch.framing == "ndjson"


@pytest.mark.parametrize(("mode", "flag"), [("ask", ["--permission-mode", "default"]),
                                            ("auto_edit", ["--permission-mode", "acceptEdits"]),
                                            ("auto", ["--permission-mode", "bypassPermissions"]),
                                            ("inherit", [])])
def test_permission_modes(mode: Any, flag: list[str]) -> None:
    argv = build_launch(request(permissions=Permissions(mode=mode))).argv
    assert argv[len(BASE_ARGS) + 1:] == flag
    assert "--permission-prompt-tool" in argv  # asked prompts still reach us in every mode


@pytest.mark.parametrize("mode", ["ask", "auto_edit", "auto", "inherit"])
def test_allow_tools_become_one_allowed_tools_flag_in_every_mode(mode: Any) -> None:
    patterns = ["Bash", "mcp__fs__*", "Bash(git *)"]
    argv = build_launch(request(permissions=Permissions(mode=mode, allow_tools=patterns),
                                options={"extra_args": ["--verbose"]})).argv
    assert argv.count("--allowedTools=Bash,mcp__fs__*,Bash(git *)") == 1
    assert argv[-1] == "--verbose"  # the variadic flag never swallows what follows
    assert not any(arg.startswith("--allowedTools") for arg in build_launch(request()).argv)


def test_model_resume_instructions_and_extra_args_in_order() -> None:
    launch = build_launch(request(
        model="claude-sonnet-4-5", resume="-dash-leading-id", instructions="Be terse.\nUse British spelling.",
        options={"binary": "/opt/claude/bin/claude", "extra_args": ["--add-dir", "/data"], "unrelated": 1}))
    assert launch.argv == [
        "/opt/claude/bin/claude", *BASE_ARGS, "--permission-mode", "default",
        "--model", "claude-sonnet-4-5", "--resume=-dash-leading-id",
        "--append-system-prompt", "Be terse.\nUse British spelling.",
        "--add-dir", "/data",
    ]


def test_env_is_added_to_the_parent_env_and_wins() -> None:
    launch = build_launch(request(env={"ANTHROPIC_API_KEY": SECRET, "CLAUDECODE": "1"},
                                  options={"home": "/iso/claude"}))
    assert launch.env == {"CLAUDECODE": "1", "CLAUDE_CONFIG_DIR": "/iso/claude", "ANTHROPIC_API_KEY": SECRET}
    assert not any(SECRET in arg for arg in launch.argv)


def test_mcp_servers_go_to_a_private_file_never_to_argv() -> None:
    servers = [
        McpServer(name="files", command="npx", args=["-y", "srv"], env={"TOKEN": SECRET}),
        McpServer(name="remote", url="https://mcp.example/v1", headers={"Authorization": f"Bearer {SECRET}"}),
    ]
    launch = build_launch(request(mcp_servers=servers))
    path = f"/state/s-1/harness/{MCP_CONFIG_FILE}"
    assert launch.argv[-3:] == ["--mcp-config", path, "--strict-mcp-config"]
    assert json.loads(launch.files[path]) == {"mcpServers": {
        "files": {"type": "stdio", "command": "npx", "args": ["-y", "srv"], "env": {"TOKEN": SECRET}},
        "remote": {"type": "http", "url": "https://mcp.example/v1",
                   "headers": {"Authorization": f"Bearer {SECRET}"}},
    }}
    assert not any(SECRET in arg for arg in launch.argv)


@pytest.mark.parametrize(("servers", "strict", "expected"), [
    ([], None, False), ([], True, True), (["s"], None, True), (["s"], False, False)])
def test_strict_mcp_follows_the_servers_unless_overridden(servers: list[str], strict: bool | None,
                                                          expected: bool) -> None:
    options = {} if strict is None else {"strict_mcp": strict}
    launch = build_launch(request(mcp_servers=[McpServer(name=n, command="x") for n in servers], options=options))
    assert ("--strict-mcp-config" in launch.argv) is expected


def test_an_mcp_server_without_a_command_or_url_is_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        mcp_config([McpServer(name="empty")])
    with pytest.raises(BadRequest):
        mcp_config([McpServer(name="twice", command="a"), McpServer(name="twice", command="b")])


@pytest.mark.parametrize("options", [{"extra_args": "--verbose"}, {"binary": 3}, {"home": ["a"]},
                                     {"strict_mcp": "yes"}])
def test_options_of_the_wrong_type_are_a_bad_request(options: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        build_launch(request(options=options))


def test_the_builder_is_pure() -> None:
    req = request(model="m", mcp_servers=[McpServer(name="a", command="x")], env={"K": "v"})
    assert build_launch(req) == build_launch(req)
