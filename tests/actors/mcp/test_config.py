"""Server definitions: what makes two the same server, and what a bad one is told."""

from __future__ import annotations

import pytest

from actors.app import Config
from actors.mcp.config import McpConfig, McpServerConfig, definition_of
from protocol.errors import BadRequest
from protocol.models import McpServer
from supervisor.config import parse_config


def test_same_command_shares_a_fingerprint_whatever_the_name_and_limits() -> None:
    a = definition_of("fs", McpServerConfig(command="srv", args=["-x"], env={"K": "v"}, cwd="/w"))
    b = definition_of("files", McpServer(name="files", command="srv", args=["-x"], env={"K": "v"},
                                         cwd="/w", tools=["read"], call_timeout=5))
    assert a.fingerprint == b.fingerprint
    assert b.tools == frozenset({"read"}) and b.call_timeout == 5


@pytest.mark.parametrize("other", [
    McpServerConfig(command="srv", args=["-y"], env={"K": "v"}, cwd="/w"),
    McpServerConfig(command="srv", args=["-x"], env={"K": "w"}, cwd="/w"),
    McpServerConfig(command="srv", args=["-x"], env={"K": "v"}, cwd="/v"),
    McpServerConfig(command="other", args=["-x"], env={"K": "v"}, cwd="/w"),
])
def test_any_difference_in_command_args_env_or_cwd_is_another_server(other: McpServerConfig) -> None:
    base = definition_of("fs", McpServerConfig(command="srv", args=["-x"], env={"K": "v"}, cwd="/w"))
    assert definition_of("fs", other).fingerprint != base.fingerprint


def test_http_servers_differ_by_url_and_headers_but_not_header_case() -> None:
    a = definition_of("s", McpServerConfig(url="http://h/mcp", headers={"Authorization": "Bearer a"}))
    b = definition_of("s", McpServerConfig(url="http://h/mcp", headers={"authorization": "Bearer a"}))
    c = definition_of("s", McpServerConfig(url="http://h/mcp", headers={"Authorization": "Bearer b"}))
    assert a.transport == "http" and a.fingerprint == b.fingerprint != c.fingerprint


@pytest.mark.parametrize("name, server", [
    ("fs", McpServerConfig()),
    ("fs", McpServerConfig(command="srv", url="http://h")),
    ("a__b", McpServerConfig(command="srv")),
    ("has space", McpServerConfig(command="srv")),
    ("", McpServerConfig(command="srv")),
])
def test_bad_definitions_are_bad_requests(name: str, server: McpServerConfig) -> None:
    with pytest.raises(BadRequest):
        definition_of(name, server)


def test_the_section_keeps_good_servers_and_names_the_bad_ones() -> None:
    loaded = parse_config(Config, """
[mcp]
max_result_bytes = 4096
[mcp.servers.good]
command = "srv"
call_timeout = 3
[mcp.servers.typo]
comand = "srv"
[mcp.servers.neither]
args = ["x"]
[mcp.servers.negative]
command = "srv"
startup_timeout = -1
[mcp.servers.off]
command = "srv"
enabled = false
""")
    config = loaded.config.mcp
    assert config.max_result_bytes == 4096 and config.servers["good"].call_timeout == 3
    assert list(config.usable()) == ["good", "negative"]  # a bad timeout is defaulted
    assert config.servers["negative"].startup_timeout == 30
    warnings = loaded.warnings
    assert len(warnings) == 4, warnings
    assert any("'mcp.servers.typo.comand'" in w for w in warnings)
    assert any("'mcp.servers.negative.startup_timeout'" in w for w in warnings)
    assert sum("server ignored" in w for w in warnings) == 2
    assert all(any(f"'mcp.servers.{n}'" in w for w in warnings) for n in ("typo", "neither"))


def test_no_section_is_the_default() -> None:
    loaded = parse_config(Config, "")
    assert loaded.config.mcp == McpConfig() and loaded.warnings == []
