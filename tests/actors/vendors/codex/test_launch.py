"""The pure Codex launch builder: argv, env and cwd from a request; secrets never in argv."""

from __future__ import annotations

from typing import Any

import pytest

from actors.harness import HarnessRequest
from actors.vendors.codex import build_launch, mcp_args, mcp_env
from actors.vendors.codex.launch import toml_value
from protocol.errors import BadRequest
from protocol.models import McpServer


def _request(**fields: Any) -> HarnessRequest:
    return HarnessRequest(session_id="s", cwd="/work/project", work_dir="/run", **fields)


def test_minimal_launch_runs_app_server_in_the_session_cwd() -> None:
    launch = build_launch(_request())
    assert launch.argv == ["codex", "app-server"]
    assert launch.env == {}
    assert launch.cwd == "/work/project"
    assert launch.framing == "ndjson" and launch.files == {}


def test_binary_model_home_env_and_extra_args() -> None:
    launch = build_launch(_request(
        model="gpt-5.5", env={"OPENAI_API_KEY": "sk-secret", "CODEX_HOME": "/ignored"},
        options={"binary": "/opt/codex", "home": "/state/codex",
                 "extra_args": ["--disable", "plugins", "-c", "x=1"]}),
        default_binary="/usr/bin/codex")
    assert launch.argv == ["/opt/codex", "app-server", "-c", 'model="gpt-5.5"',
                           "--disable", "plugins", "-c", "x=1"]
    assert launch.env == {"OPENAI_API_KEY": "sk-secret", "CODEX_HOME": "/state/codex"}
    assert "sk-secret" not in " ".join(launch.argv)


def test_default_binary_is_used_without_an_option() -> None:
    assert build_launch(_request(), default_binary="/native/codex").argv[0] == "/native/codex"


@pytest.mark.parametrize("options", [{"binary": 3}, {"home": ["x"]}, {"extra_args": "--x"},
                                     {"extra_args": ["ok", 1]}])
def test_bad_option_types_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        build_launch(_request(options=options))


def test_stdio_mcp_server_passes_secrets_through_env_vars() -> None:
    server = McpServer(name="files", command="npx", args=["-y", "srv pkg", 'q"x'],
                       env={"TOKEN": "s3cret", "MODE": "ro"})
    launch = build_launch(_request(mcp_servers=[server]))
    assert launch.argv[2:] == [
        "-c", 'mcp_servers.files.command="npx"',
        "-c", 'mcp_servers.files.args=["-y", "srv pkg", "q\\"x"]',
        "-c", 'mcp_servers.files.env_vars=["MODE", "TOKEN"]',
    ]
    assert launch.env == {"TOKEN": "s3cret", "MODE": "ro"}
    assert "s3cret" not in " ".join(launch.argv)


def test_http_mcp_server_headers_go_through_env_vars() -> None:
    server = McpServer(name="web-1", url="http://127.0.0.1:9/mcp",
                       headers={"Authorization": "Bearer tok", "X-Api-Key": "k1"})
    assert mcp_args([server]) == [
        "-c", 'mcp_servers.web-1.url="http://127.0.0.1:9/mcp"',
        "-c", 'mcp_servers.web-1.bearer_token_env_var="CORRAL_MCP_WEB_1_BEARER_TOKEN"',
        "-c", 'mcp_servers.web-1.env_http_headers={ "X-Api-Key" = "CORRAL_MCP_WEB_1_HEADER_X_API_KEY" }',
    ]
    assert mcp_env([server]) == {"CORRAL_MCP_WEB_1_BEARER_TOKEN": "tok",
                                 "CORRAL_MCP_WEB_1_HEADER_X_API_KEY": "k1"}


def test_a_non_bearer_authorization_header_is_forwarded_whole() -> None:
    server = McpServer(name="w", url="http://h/mcp", headers={"Authorization": "Basic abc"})
    assert mcp_env([server]) == {"CORRAL_MCP_W_HEADER_AUTHORIZATION": "Basic abc"}


@pytest.mark.parametrize("servers", [
    [McpServer(name="a.b", command="x")],
    [McpServer(name="", command="x")],
    [McpServer(name="a", command="x"), McpServer(name="a", command="y")],
    [McpServer(name="a")],
    [McpServer(name="a", command="x", url="http://h")],
    [McpServer(name="a", command="x", env={"K": "1"}), McpServer(name="b", command="y", env={"K": "2"})],
])
def test_invalid_or_conflicting_servers_are_refused(servers: list[McpServer]) -> None:
    with pytest.raises(BadRequest):
        build_launch(_request(mcp_servers=servers))


def test_server_env_conflicting_with_session_env_is_refused_without_the_values() -> None:
    server = McpServer(name="a", command="x", env={"KEY": "one-secret"})
    with pytest.raises(BadRequest) as caught:
        build_launch(_request(mcp_servers=[server], env={"KEY": "two-secret"}))
    assert "secret" not in caught.value.message


def test_same_value_in_two_servers_is_fine() -> None:
    servers = [McpServer(name="a", command="x", env={"K": "1"}),
               McpServer(name="b", command="y", env={"K": "1"})]
    assert mcp_env(servers) == {"K": "1"}


def test_toml_values() -> None:
    assert toml_value("a\nb\\c\"d é") == '"a\\nb\\\\c\\"d é"'
    assert toml_value([]) == "[]"
    assert toml_value({"A B": "x"}) == '{ "A B" = "x" }'
