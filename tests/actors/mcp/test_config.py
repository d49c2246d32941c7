"""Server definitions: what makes two the same server, and what a bad one is told."""

from __future__ import annotations

import pytest

from actors.mcp.config import McpServerConfig, definition_of, mcp_section
from protocol.errors import BadRequest
from protocol.models import McpServer


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
    config, warnings = mcp_section({
        "max_result_bytes": 4096,
        "servers": {"good": {"command": "srv", "call_timeout": 3},
                    "typo": {"comand": "srv"},
                    "neither": {"args": ["x"]},
                    "negative": {"command": "srv", "startup_timeout": -1}},
    })
    assert list(config.servers) == ["good"] and config.max_result_bytes == 4096
    assert config.servers["good"].call_timeout == 3
    assert len(warnings) == 3
    assert all(any(f"'mcp.servers.{n}'" in w for w in warnings) for n in ("typo", "neither", "negative"))


def test_no_section_is_the_default() -> None:
    config, warnings = mcp_section(None)
    assert config.servers == {} and warnings == []
