"""The permission policy answers by mode and pattern; the tracker derives state and stalls."""

from __future__ import annotations

import pytest

from actors.session.policy import Policy
from actors.session.tracker import Tracker
from protocol import events as ev
from protocol.models import Permissions


def _ask(tool: str, kind: ev.ToolKind = "exec") -> ev.Permission:
    return ev.Permission(permission_id="p", tool=tool, kind=kind)


@pytest.mark.parametrize(
    ("mode", "tool", "kind", "expected"),
    [
        ("ask", "bash", "exec", None),
        ("ask", "mcp__fs__read", "mcp", "allow"),
        ("auto_edit", "Edit", "edit", "allow"),
        ("auto_edit", "Read", "read", "allow"),
        ("auto_edit", "bash", "exec", None),
        ("auto", "bash", "exec", "allow"),
        ("inherit", "bash", "exec", None),
        ("inherit", "mcp__fs__write", "mcp", "allow"),
    ],
)
def test_policy_modes_and_patterns(mode: str, tool: str, kind: ev.ToolKind, expected: str | None) -> None:
    policy = Policy(Permissions(mode=mode, allow_tools=["mcp__fs__*"]))  # type: ignore[arg-type]
    assert policy.decide(_ask(tool, kind)) == expected


def test_allow_always_remembers_the_tool() -> None:
    policy = Policy(Permissions())
    policy.remember(_ask("bash"), "allow")
    assert policy.decide(_ask("bash")) is None
    policy.remember(_ask("bash"), "allow_always")
    assert policy.decide(_ask("bash")) == "allow"
    assert policy.decide(_ask("python")) is None


def test_tracker_states_and_stall_deadline() -> None:
    tracker = Tracker(stall_threshold=300, now=0)
    assert tracker.state == "idle" and tracker.stall_deadline() is None
    tracker.turn_started(10)
    assert tracker.state == "running" and tracker.stall_deadline() == 310
    tracker.observe(ev.Tool(call_id="t", name="bash", phase="started"), 20)
    assert tracker.stall_deadline() is None  # a tool in flight is not a stall
    tracker.observe(ev.Tool(call_id="t", name="bash", phase="completed"), 30)
    assert tracker.stall_deadline() == 330
    assert tracker.check_stall(329) is None
    assert tracker.check_stall(330) is True and tracker.stalled
    tracker.observe(ev.Permission(permission_id="p", tool="bash"), 400)
    assert tracker.state == "waiting"
    assert tracker.check_stall(401) is False
    tracker.observe(ev.PermissionDecided(permission_id="p", decision="allow", by="c-1"), 402)
    tracker.observe(ev.Result(), 403)
    assert tracker.state == "idle" and tracker.stall_deadline() is None


def test_a_resumed_autonomous_run_is_a_running_turn_until_its_result() -> None:
    # A restarted native worker goes on with its run by itself (no prompt went to it): the
    # session is running (prompts steer; the stall timer runs), not idle.
    tracker = Tracker(stall_threshold=300, now=0)
    tracker.observe(ev.Checkpoint(turn=2, resumed=True), 5)
    assert tracker.state == "running" and tracker.stall_deadline() == 305
    tracker.observe(ev.Checkpoint(turn=3), 50)
    assert tracker.state == "running"
    tracker.observe(ev.Result(stop_reason="completed"), 60)
    assert tracker.state == "idle"
