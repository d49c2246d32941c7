"""The OpenCode server launch, its fingerprint, and the SSE parser of the HTTP client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from actors.harness import HarnessRequest
from actors.vendors.opencode import build_launch, fingerprint
from actors.vendors.opencode.http import SseParser
from actors.vendors.opencode.launch import repository_root
from protocol.errors import BadRequest
from protocol.models import McpServer, Permissions


def request(cwd: str = "/w", **fields: Any) -> HarnessRequest:
    return HarnessRequest(**{"session_id": "s", "work_dir": "/r", **fields}, cwd=cwd)


def test_the_server_launch_and_its_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    launch = build_launch(request(str(tmp_path / "pkg" / "sub"), env={"K": "v"},
                                  options={"binary": "/opt/oc", "home": "/h"}))
    assert launch.argv == ["/opt/oc", "serve", "--hostname", "127.0.0.1", "--port", "0"]
    assert launch.cwd == str(tmp_path)
    assert launch.env == {"K": "v", "XDG_CONFIG_HOME": "/h/config", "XDG_DATA_HOME": "/h/data"}
    assert repository_root("/") == "/"


def test_mcp_servers_and_config_travel_in_the_config_content() -> None:
    launch = build_launch(request(
        options={"config": {"provider": {"p": {}}}},
        mcp_servers=[McpServer(name="fs", command="npx", args=["-y", "srv"], env={"T": "s"}),
                     McpServer(name="web", url="https://x/mcp", headers={"A": "b"})]))
    content = json.loads(launch.env["OPENCODE_CONFIG_CONTENT"])
    assert content == {"provider": {"p": {}}, "mcp": {
        "fs": {"type": "local", "command": ["npx", "-y", "srv"], "environment": {"T": "s"}},
        "web": {"type": "remote", "url": "https://x/mcp", "headers": {"A": "b"}}}}


def test_sessions_that_differ_only_per_session_share_a_fingerprint() -> None:
    base = fingerprint(build_launch(request()))
    same = [request(model="a/b"), request(permissions=Permissions(mode="ask")),
            request(resume="ses_x"), request(session_id="other")]
    assert {fingerprint(build_launch(r)) for r in same} == {base}
    other = [request(env={"K": "v"}), request(options={"extra_args": ["--x"]}),
             request(mcp_servers=[McpServer(name="m", command="x")]), request(cwd="/elsewhere")]
    assert base not in {fingerprint(build_launch(r)) for r in other}


@pytest.mark.parametrize("fields", [
    {"options": {"extra_args": "x"}}, {"options": {"config": []}}, {"options": {"binary": 1}},
    {"model": "no-provider"}, {"mcp_servers": [McpServer(name="m")]},
    {"mcp_servers": [McpServer(name="m", command="a"), McpServer(name="m", command="b")]},
])
def test_mistakes_are_bad_requests(fields: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        build_launch(request(**fields))


def test_sse_parser_joins_data_lines_across_any_split() -> None:
    stream = b'data: {"a":1}\n\n: comment\nid: 7\ndata: x\ndata: y\r\n\r\ndata:z\n\n'
    for cut in range(len(stream) + 1):
        parser = SseParser()
        out = parser.feed(stream[:cut]) + parser.feed(stream[cut:])
        assert out == [b'{"a":1}', b"x\ny", b"z"]
    assert SseParser().feed(b"data: unfinished\n") == []
