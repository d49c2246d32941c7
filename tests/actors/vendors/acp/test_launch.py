"""The ACP launch builder, the Gemini minute wait, and the MCP servers in ACP's shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from actors.harness import HarnessRequest
from actors.vendors.acp import PROFILES, AcpDriver, build_launch, mcp_servers, minute_wait
from protocol.errors import BadRequest
from protocol.models import McpServer, Permissions


def request(**fields: Any) -> HarnessRequest:
    return HarnessRequest(**{"session_id": "s-1", "cwd": "/w", "work_dir": "/r", **fields})


def test_gemini_takes_its_acp_flag_model_env_and_home() -> None:
    launch = build_launch(request(model="gemini-2.5-flash", env={"GEMINI_API_KEY": "k"},
                                  options={"home": "/h", "extra_args": ["--debug"]}),
                          PROFILES["gemini"])
    assert launch.argv == ["gemini", "--acp", "--model", "gemini-2.5-flash", "--debug"]
    assert launch.env == {"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_API_KEY": "k", "HOME": "/h"}
    assert launch.cwd == "/w"


def test_claude_acp_gets_no_model_flag_and_its_config_home() -> None:
    launch = build_launch(request(model="haiku", options={"home": "/h", "binary": "/opt/x"}),
                          PROFILES["claude-acp"], default_binary="/usr/bin/claude-code-acp")
    assert launch.argv == ["/opt/x"]  # the model goes by session/set_model
    assert launch.env == {"CLAUDE_CONFIG_DIR": "/h"}


def test_opencode_acp_gets_its_permission_mode_in_env_and_its_xdg_homes() -> None:
    def launch(mode: Any, **env: str) -> dict[str, str]:
        built = build_launch(request(model="fake/m", permissions=Permissions(mode=mode), env=env,
                                     options={"home": "/h"}), PROFILES["opencode-acp"])
        assert built.argv == ["opencode", "acp"]  # the model goes by its config option
        return built.env

    rules = {mode: json.loads(launch(mode)["OPENCODE_PERMISSION"])
             for mode in ("ask", "auto_edit", "auto")}
    assert rules == {"ask": {"edit": "ask", "bash": "ask"},
                     "auto_edit": {"edit": "allow", "bash": "ask"},
                     "auto": {"edit": "allow", "bash": "allow"}}
    assert launch("inherit") == {"XDG_CONFIG_HOME": "/h/config", "XDG_DATA_HOME": "/h/data"}
    assert launch("ask", OPENCODE_PERMISSION="{}")["OPENCODE_PERMISSION"] == "{}"


def test_codex_acp_asks_through_its_approval_policy_and_sets_other_modes_later() -> None:
    def argv(mode: Any) -> list[str]:
        built = build_launch(request(permissions=Permissions(mode=mode),
                                     options={"home": "/h", "extra_args": ["-c", "x=1"]}),
                             PROFILES["codex-acp"])
        assert built.env == {"CODEX_HOME": "/h"}
        return built.argv

    assert argv("ask") == ["codex-acp", "-c", 'approval_policy="untrusted"',
                           "-c", 'sandbox_mode="workspace-write"', "-c", "x=1"]
    assert argv("auto_edit") == argv("auto") == ["codex-acp", "-c", "x=1"]  # session/set_mode


def test_copilot_and_the_other_profiles_start_in_acp_mode() -> None:
    assert build_launch(request(), PROFILES["copilot"]).argv == [
        "copilot", "--acp", "--no-auto-update", "--disable-client-telemetry"]
    assert build_launch(request(), PROFILES["opencode-acp"]).argv == ["opencode", "acp"]
    assert build_launch(request(), PROFILES["cursor"]).argv == ["cursor-agent", "acp"]
    assert build_launch(request(), PROFILES["grok"]).argv == ["grok", "agent", "stdio"]
    assert set(PROFILES) == {"gemini", "copilot", "claude-acp", "codex-acp", "opencode-acp",
                             "cursor", "omp", "grok"}


def test_a_wait_wraps_the_command_and_keeps_its_argv() -> None:
    launch = build_launch(request(), PROFILES["gemini"], wait=12.34)
    assert launch.argv == ["/bin/sh", "-c", 'sleep "$0" && exec "$@"', "12.3", "gemini", "--acp"]


@pytest.mark.parametrize("options", [{"extra_args": "x"}, {"binary": 3}, {"auth_method": 1}])
def test_bad_options_are_bad_requests(options: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        build_launch(request(options=options), PROFILES["gemini"])


def test_mcp_servers_take_acps_list_of_pairs_shape() -> None:
    servers = [McpServer(name="fs", command="mcp-fs", args=["--ro"], env={"TOKEN": "t"}),
               McpServer(name="web", url="http://127.0.0.1:9/mcp", headers={"X-Key": "v"})]
    assert mcp_servers(servers) == [
        {"name": "fs", "command": "mcp-fs", "args": ["--ro"],
         "env": [{"name": "TOKEN", "value": "t"}]},
        {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp",
         "headers": [{"name": "X-Key", "value": "v"}]}]
    with pytest.raises(BadRequest):
        mcp_servers([McpServer(name="a", command="x"), McpServer(name="a", command="y")])
    with pytest.raises(BadRequest):
        mcp_servers([McpServer(name="b")])


@pytest.mark.parametrize(("now", "opened", "launched", "wait"), [
    (600.0 + 10, 600.0 + 5, 600.0, 60 - 10 + 1),    # opened this minute: wait for the next
    (600.0 + 70, 600.0 + 5, 600.0, 0.0),             # opened in an earlier minute: go
    (600.0 + 59.5, 600.0 + 30, 600.0, 1.5),          # just before the boundary
    (600.0 + 20, None, None, 60 - 20 + 1),           # unknown (a daemon restart): next minute
    (600.0 + 20, 600.0 - 50, 600.0 + 5, 60 - 20 + 1),  # the last child never opened it
])
def test_minute_wait(now: float, opened: float | None, launched: float | None,
                     wait: float) -> None:
    assert minute_wait(now, opened, launched) == pytest.approx(wait)


def test_the_driver_waits_only_for_a_gemini_resume_in_the_same_minute() -> None:
    clock = [1000.0]
    driver = AcpDriver(PROFILES["gemini"], clock=lambda: clock[0])
    first = request(session_id="s-9")
    assert driver.launch(first).argv[0] == "gemini"
    opened(driver, first)  # at 1000.0 (wall clock), in the minute 960–1020
    clock[0] = 1005.0
    resumed = request(session_id="s-9", resume="v-1")
    assert driver.launch(resumed).argv[:4] == [
        "/bin/sh", "-c", 'sleep "$0" && exec "$@"', "16.0"]
    clock[0] = 1060.0
    assert driver.launch(resumed).argv[0] == "/bin/sh"  # that child never opened it: wait
    clock[0] = 1082.0  # after its wait (1081), the new child opens the session
    opened(driver, resumed)
    clock[0] = 1150.0  # a later minute than the last open: no wait
    assert driver.launch(resumed).argv[0] == "gemini"
    copilot = AcpDriver(PROFILES["copilot"], clock=lambda: clock[0])
    assert copilot.launch(request(resume="v-2")).argv[0] == "copilot"


def opened(driver: AcpDriver, req: HarnessRequest) -> None:
    """Open an ACP session through a translator of ``driver`` (the agent's answers, scripted)."""
    translator = driver.translator(req)
    translator.start(0.0)
    translator.receive(b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}', 0.0)
    translator.receive(b'{"jsonrpc":"2.0","id":2,"result":{"sessionId":"v-1"}}', 0.0)
    assert translator.ready
