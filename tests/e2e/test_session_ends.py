"""How a session ends, as its log records it: every turn ends, every permission is decided, and
the ``exit`` of the child comes after both, whoever ended it (the child, the client, the daemon).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import trio

from .daemonproc import DaemonProc, raw_client, start_daemon, stop_daemon


@pytest.fixture
def daemon(placed_daemon: DaemonProc) -> DaemonProc:
    """This module's daemon tests run on every placement backend (``placed_daemon``)."""
    return placed_daemon


def _kind(frame: dict[str, Any]) -> str:
    return str(frame["event"]["type"])


def _log(state: Path, sid: str) -> list[dict[str, Any]]:
    lines = (state / "sessions" / sid / "events.jsonl").read_text().splitlines()
    return [json.loads(line)["event"] for line in lines]


def _after(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The events after the last one of ``kind``."""
    last = max(i for i, e in enumerate(events) if e["type"] == kind)
    return events[last + 1:]


async def test_daemon_stop_with_a_permission_open_goes_closing_cancelled_exit_closed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    daemon = await start_daemon(state)
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        await client.ok("session.prompt", session_id=sid, text="/ask echo hi")
        await client.events_until(sid, lambda f: _kind(f) == "permission")
        await client.ok("daemon.shutdown")
    assert await stop_daemon(daemon) == 0
    tail = _after(_log(state, sid), "permission")
    assert tail == [
        {"type": "status", "state": "waiting", "stalled": False},
        {"type": "status", "state": "closing", "stalled": False},
        {"type": "permission_decided", "permission_id": "p1", "decision": "cancelled", "by": "session",
         "by_name": "session"},
        {**tail[3], "type": "result", "stop_reason": "interrupted", "is_error": False},
        {**tail[4], "type": "exit", "reason": "closed"},
        {"type": "status", "state": "closed", "stalled": False},
    ]
    meta = json.loads((state / "sessions" / sid / "meta.json").read_text())
    assert meta["state"] == "closed"


async def test_a_turn_in_flight_when_its_child_dies_ends_with_an_error_and_a_result(
        daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        info = (await client.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]
        sid = info["id"]
        await client.ok("session.subscribe", session_id=sid)
        await client.ok("session.prompt", session_id=sid, text="/slow 100")
        await client.events_until(sid, lambda f: _kind(f) == "assistant")
        os.kill(info["pid"], signal.SIGKILL)
        frames = await client.events_until(sid, lambda f: _kind(f) == "exit")
        events = [f["event"] for f in frames if _kind(f) != "status"]
        error, result, exit_event = events[-3:]
        assert error["type"] == "error" and error["code"] == "harness_crashed"
        assert "SIGKILL" in error["message"]
        assert result["type"] == "result" and result["is_error"] is True
        assert result["duration_ms"] is not None
        assert exit_event["reason"] == "crashed"
        # The session restarts and takes the next prompt as usual.
        await client.events_until(sid, lambda f: _kind(f) == "init")
        assert (await client.ok("session.prompt", session_id=sid, text="again"))["delivery"] == "prompted"


async def test_close_of_a_running_turn_ends_it_interrupted_before_the_exit(
        daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        await client.ok("session.prompt", session_id=sid, text="/slow 100")
        await client.events_until(sid, lambda f: _kind(f) == "assistant")
        await client.ok("session.close", session_id=sid)
        frames = await client.events_until(sid, lambda f: _kind(f) == "status" and f["event"]["state"] == "closed")
    kinds = [_kind(f) for f in frames]
    assert kinds[-3:] == ["result", "exit", "status"]
    assert frames[-3]["event"]["stop_reason"] == "interrupted"
    assert frames[-2]["event"]["reason"] == "closed"
    assert {"type": "status", "state": "closing", "stalled": False} in [f["event"] for f in frames]


async def test_a_permission_asked_during_the_close_sequence_is_cancelled(
        daemon: DaemonProc, tmp_path: Path) -> None:
    ask = {"type": "permission", "permission_id": "late", "tool": "bash", "kind": "exec",
           "input": {"command": "ls"}, "options": ["allow", "deny"]}
    # The child asks only once its stdin closes (the goodbye), then lingers until told off.
    script = f"cat >/dev/null; echo '{json.dumps(ask)}'; sleep 0.5"
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                               options={"script": script}))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        await client.ok("session.close", session_id=sid)
        frames = await client.events_until(sid, lambda f: _kind(f) == "exit")
    events = [f["event"] for f in frames]
    asked = events.index({**ask, "policy": False})  # the session adds whether policy answered
    assert events[asked + 1] == {"type": "permission_decided", "permission_id": "late",
                                 "decision": "cancelled", "by": "session", "by_name": "session"}
    assert events[-1]["reason"] == "closed"


async def test_the_daemon_stops_its_sessions_in_parallel_each_to_its_exit(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[sessions]\nclose_timeout = 3.0\n")
    state = tmp_path / "state"
    daemon = await start_daemon(state, config=str(config))
    stubborn = "trap '' TERM; exec 0<&-; while :; do sleep 0.1; done"  # needs the SIGKILL at 3 s
    async with raw_client(daemon) as client:
        sids = [(await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                                 options={"script": stubborn}))["session"]["id"] for _ in range(3)]
    started = trio.current_time()
    assert await stop_daemon(daemon) == 0
    assert trio.current_time() - started < 7.0  # one after the other would take 9 s at least
    for sid in sids:
        events = _log(state, sid)
        assert [e["type"] for e in events[-3:]] == ["status", "exit", "status"]
        assert events[-3]["state"] == "closing" and events[-1]["state"] == "closed"
        assert events[-2] == {"type": "exit", "exit_code": None, "signal": "SIGKILL", "reason": "closed"}
