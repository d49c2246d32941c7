"""The options every vendor shares (binary, home, extra_args, resume), decoded once: the same
refusals from every vendor driver at ``session.create`` (its ``translator``), the same env order."""

from __future__ import annotations

from typing import Any

import pytest

from actors.harness import HarnessRequest
from actors.vendors.acp import PROFILES, AcpDriver
from actors.vendors.claude import ClaudeDriver
from actors.vendors.codex import CodexDriver
from actors.vendors.opencode import OpenCodeDriver, OpenCodeServers
from actors.vendors.options import VendorOptions, home_env, vendor_options
from actors.vendors.pi import PiDriver
from protocol.errors import BadRequest

DRIVERS = {
    "claude": lambda: ClaudeDriver(),
    "codex": lambda: CodexDriver(),
    "gemini": lambda: AcpDriver(PROFILES["gemini"]),
    "pi": lambda: PiDriver(),
    "opencode": lambda: OpenCodeDriver(OpenCodeServers(None)),
}


def request(**options: Any) -> HarnessRequest:
    return HarnessRequest(session_id="s", cwd="/work", work_dir="/run", options=options)


def test_the_shared_options_decode_and_empty_strings_are_absent() -> None:
    found = vendor_options(request(binary="/opt/x", home="", extra_args=["-v"], resume="r1",
                                   log_path="/elsewhere"), VendorOptions)
    assert found == VendorOptions(binary="/opt/x", home=None, extra_args=["-v"], resume="r1")


@pytest.mark.parametrize(("options", "named"), [
    ({"binary": 3}, "options.binary"), ({"home": ["x"]}, "options.home"),
    ({"extra_args": "--x"}, "options.extra_args"), ({"extra_args": ["ok", 1]}, "options.extra_args[1]"),
    ({"resume": 7}, "options.resume"),
])
@pytest.mark.parametrize("harness", sorted(DRIVERS))
def test_every_vendor_refuses_a_wrong_type_at_create_naming_the_option(
        harness: str, options: dict[str, Any], named: str) -> None:
    with pytest.raises(BadRequest) as caught:
        DRIVERS[harness]().translator(request(**options))
    assert named in caught.value.message


def test_the_home_goes_in_the_vendors_variables_and_wins_over_env() -> None:
    assert home_env(None, {"X_HOME": ""}) == {}
    assert home_env("/h", {"XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data"}) == {
        "XDG_CONFIG_HOME": "/h/config", "XDG_DATA_HOME": "/h/data"}
    for harness, variable in [("claude", "CLAUDE_CONFIG_DIR"), ("codex", "CODEX_HOME"),
                              ("pi", "PI_CODING_AGENT_DIR")]:
        launch = DRIVERS[harness]().launch(HarnessRequest(
            session_id="s", cwd="/work", work_dir="/run", env={variable: "/from-env", "K": "v"},
            options={"home": "/iso"}))
        assert launch.env[variable] == "/iso" and launch.env["K"] == "v"
