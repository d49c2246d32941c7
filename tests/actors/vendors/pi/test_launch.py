"""The pi launch builder: argv, env and the permission gate per mode."""

from __future__ import annotations

from typing import Any

import pytest

from actors.harness import HarnessRequest
from actors.vendors.pi import GATE, build_launch
from protocol.errors import BadRequest
from protocol.models import McpServer, Permissions


def request(**fields: Any) -> HarnessRequest:
    return HarnessRequest(session_id="s", cwd="/work", work_dir="/run", **fields)


def test_the_plain_launch_is_rpc_mode_in_the_cwd() -> None:
    launch = build_launch(request(permissions=Permissions(mode="auto")))
    assert launch.argv == ["pi", "--mode", "rpc"]
    assert (launch.cwd, launch.env) == ("/work", {})


@pytest.mark.parametrize(("mode", "gated"), [("ask", True), ("auto_edit", True), ("auto", False),
                                             ("inherit", False)])
def test_the_gate_is_loaded_where_clients_decide(mode: str, gated: bool) -> None:
    argv = build_launch(request(permissions=Permissions(mode=mode))).argv  # type: ignore[arg-type]
    assert (["-e", str(GATE)] == argv[3:5]) is gated
    assert GATE.is_file() and GATE.read_text().startswith("// corral's permission gate")


def test_every_option_lands_where_pi_reads_it() -> None:
    launch = build_launch(request(
        model="openai/gpt-4o:high", resume="/s/session.jsonl", instructions="Be brief.",
        env={"OPENAI_API_KEY": "k", "PI_CODING_AGENT_DIR": "/ignored"},
        permissions=Permissions(mode="auto"),
        options={"binary": "/opt/pi", "home": "/home/pi", "extra_args": ["--thinking", "low"]}))
    assert launch.argv == ["/opt/pi", "--mode", "rpc", "--model", "openai/gpt-4o:high",
                           "--session", "/s/session.jsonl", "--append-system-prompt", "Be brief.",
                           "--thinking", "low"]
    assert launch.env == {"OPENAI_API_KEY": "k", "PI_CODING_AGENT_DIR": "/home/pi"}


def test_the_detected_binary_is_the_default() -> None:
    launch = build_launch(request(permissions=Permissions(mode="auto")), default_binary="/usr/bin/pi")
    assert launch.argv[0] == "/usr/bin/pi"


@pytest.mark.parametrize("fields", [
    {"options": {"binary": 3}}, {"options": {"home": ["x"]}}, {"options": {"extra_args": "-x"}},
    {"options": {"extra_args": [1]}}, {"mcp_servers": [McpServer(name="m", command="x")]},
])
def test_mistakes_are_bad_requests(fields: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        build_launch(request(**fields))
