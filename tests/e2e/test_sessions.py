"""Session behaviour through a real daemon: prompts, permissions, timeouts, stalls, close."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from .daemonproc import DaemonProc, raw_client, start_daemon, stop_daemon, wait_gone


@pytest.fixture
def daemon(placed_daemon: DaemonProc) -> DaemonProc:
    """This module's daemon tests run on every placement backend (``placed_daemon``)."""
    return placed_daemon


def _kind(frame: dict[str, Any]) -> str:
    return str(frame["event"]["type"])


def _session_children(status: dict[str, Any]) -> list[dict[str, Any]]:
    """``daemon.status`` children but the ray backend's gateway (the daemon's own, permanent)."""
    return [c for c in status["children"] if c["kind"] != "placement-gateway"]


async def test_state_files_are_private_and_status_reports_children(daemon: DaemonProc, tmp_path: Path) -> None:
    for name in ("token", "daemon.json", "corral.sock"):
        assert stat.S_IMODE(os.stat(daemon.state_dir / name).st_mode) == 0o600, name
    assert set(daemon.info) == {"pid", "url", "socket", "version", "started_at"}
    assert daemon.info["url"].startswith("ws://127.0.0.1:") and daemon.info["url"].endswith("/v1")
    async with raw_client(daemon, unix=True) as client:
        info = (await client.ok("session.create", harness="fake", cwd=str(tmp_path), name="n1",
                                env={"SECRET_TOKEN": "hunter2"}))["session"]
        assert info["state"] == "idle" and info["pid"] and info["name"] == "n1"
        status = await client.ok("daemon.status")
        assert status["pid"] == daemon.info["pid"] and status["sessions"] == 1
        assert status["clients"] == 1 and status["uptime_s"] >= 0
        assert [c["pid"] for c in _session_children(status)] == [info["pid"]]
        harnesses = {h["harness"]: h for h in (await client.ok("harness.list"))["harnesses"]}
        assert harnesses["fake"]["available"] is True
        assert {"harness", "available", "version", "path", "features"} <= set(harnesses["fake"])
    # The secret reached the child's environment and nothing else.
    assert psutil.Process(info["pid"]).environ().get("SECRET_TOKEN") == "hunter2"
    for path in daemon.state_dir.rglob("*"):
        if path.is_file() and path.name != "corral.sock":
            assert b"hunter2" not in path.read_bytes(), path


async def test_held_prompts_reach_the_harness_in_order_one_turn_each(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                               options={"steer": False}))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        deliveries = [(await client.ok("session.prompt", session_id=sid, text=t))["delivery"]
                      for t in ("/slow 3", "one", "two")]
        assert deliveries == ["prompted", "held", "held"]
        frames = await client.events_until(sid, lambda f: _kind(f) == "result"
                                           and sum(1 for g in client.frames if g.get("event", {}).get("type") == "result") == 3)
        users = [(f["event"]["text"], f["event"]["delivery"]) for f in frames if _kind(f) == "user"]
        assert users == [("/slow 3", "prompted"), ("one", "held"), ("two", "held")]
        texts = "".join(f["event"]["text"] for f in frames if _kind(f) == "assistant")
        assert texts.endswith("echo: oneecho: two")


async def test_steered_prompts_are_reported_as_steered(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        await client.ok("session.prompt", session_id=sid, text="/slow 8")
        await client.events_until(sid, lambda f: _kind(f) == "assistant")
        assert (await client.ok("session.prompt", session_id=sid, text="left"))["delivery"] == "steered"
        frames = await client.events_until(sid, lambda f: _kind(f) == "result")
        assert {"type": "user", "text": "left", "delivery": "steered"} in [f["event"] for f in frames]
        assert "[steered: left]" in "".join(f["event"].get("text", "") for f in frames if _kind(f) == "assistant")


async def test_held_prompts_that_never_reach_the_harness_are_reported_on_close(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                               options={"steer": False}))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        await client.ok("session.prompt", session_id=sid, text="/slow 50")
        await client.events_until(sid, lambda f: _kind(f) == "assistant")
        assert (await client.ok("session.prompt", session_id=sid, text="never sent"))["delivery"] == "held"
        await client.ok("session.close", session_id=sid)
        frames = await client.events_until(sid, lambda f: _kind(f) == "exit")
        errors = [f["event"] for f in frames if _kind(f) == "error"]
        assert errors and "never sent" in errors[-1]["message"]
        assert frames[-1]["event"]["reason"] == "closed"
        late = await client.call("session.prompt", session_id=sid, text="x")
        assert late["code"] == "session_closed"


async def test_permission_timeout_denies_and_interrupt_cancels(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[sessions]\npermission_timeout = 1.0\n")
    daemon = await start_daemon(tmp_path / "state", config=str(config))
    try:
        async with raw_client(daemon) as client:
            sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]["id"]
            await client.ok("session.subscribe", session_id=sid)
            await client.ok("session.prompt", session_id=sid, text=f"/ask touch {tmp_path}/x")
            frames = await client.events_until(sid, lambda f: _kind(f) == "result")
            decided = [f["event"] for f in frames if _kind(f) == "permission_decided"]
            assert decided == [{"type": "permission_decided", "permission_id": "p1",
                                "decision": "timeout", "by": "session", "by_name": "session"}]
            states = [f["event"]["state"] for f in frames if _kind(f) == "status"]
            assert "waiting" in states
            assert not (tmp_path / "x").exists()
            # An interrupt while a permission is open cancels it.
            await client.ok("session.prompt", session_id=sid, text="/ask true")
            await client.events_until(sid, lambda f: _kind(f) == "permission")
            await client.ok("session.interrupt", session_id=sid)
            frames = await client.events_until(sid, lambda f: _kind(f) == "result")
            decided = [f["event"] for f in frames if _kind(f) == "permission_decided"]
            assert [d["decision"] for d in decided] == ["cancelled"]
            assert frames[-1]["event"]["stop_reason"] == "interrupted"
    finally:
        assert await stop_daemon(daemon) == 0


async def test_a_silent_turn_is_reported_stalled(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[sessions]\nstall_threshold = 0.5\n")
    daemon = await start_daemon(tmp_path / "state", config=str(config))
    try:
        async with raw_client(daemon) as client:
            script = "read line; echo '{\"type\":\"assistant\",\"text\":\"thinking\",\"delta\":true}'; sleep 30"
            sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                                   options={"script": script}))["session"]["id"]
            await client.ok("session.subscribe", session_id=sid)
            await client.ok("session.prompt", session_id=sid, text="go")
            frames = await client.events_until(sid, lambda f: _kind(f) == "status" and f["event"]["stalled"])
            assert frames[-1]["event"] == {"type": "status", "state": "running", "stalled": True}
    finally:
        assert await stop_daemon(daemon) == 0


async def test_close_runs_the_close_sequence_and_leaves_no_process(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        script = "sh -c 'sleep 300' & exec python3 -m actors.fake.child"
        info = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                                options={"script": script}))["session"]
        await client.ok("session.subscribe", session_id=info["id"])
        family = [info["pid"], *(p.pid for p in psutil.Process(info["pid"]).children(recursive=True))]
        assert await client.ok("session.close", session_id=info["id"]) == {}
        assert (await client.ok("session.get", session_id=info["id"]))["session"]["state"] == "closed"
        assert wait_gone(family, timeout=10) == []
        again = await client.ok("session.close", session_id=info["id"])
        assert again == {}
        assert _session_children(await client.ok("daemon.status")) == []


async def test_graceful_shutdown_closes_sessions_and_they_are_listed_after_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    daemon = await start_daemon(state)
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                               prompt="hello"))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        await client.events_until(sid, lambda f: _kind(f) == "result")
        pid = (await client.ok("session.get", session_id=sid))["session"]["pid"]
        await client.ok("daemon.shutdown")
        frames = await client.events_until(sid, lambda f: _kind(f) == "exit")
        assert frames[-1]["event"]["reason"] == "closed"
    assert await stop_daemon(daemon) == 0
    assert not (state / "daemon.json").exists()
    assert wait_gone([pid]) == []
    again = await start_daemon(state)
    try:
        async with raw_client(again) as client:
            [listed] = (await client.ok("session.list"))["sessions"]
            assert listed["id"] == sid and listed["state"] == "closed"
            last = listed["last_seq"]
            await client.ok("session.subscribe", session_id=sid, from_seq=last)
            frame = await client.next_pushed()
            assert frame["seq"] == last and _kind(frame) == "status"
        lines = (state / "sessions" / sid / "events.jsonl").read_text().splitlines()
        assert [json.loads(line)["seq"] for line in lines] == list(range(1, last + 1))
    finally:
        assert await stop_daemon(again) == 0


async def test_a_second_daemon_on_the_same_state_dir_is_refused(daemon: DaemonProc) -> None:
    with trio.fail_after(30):
        second = await trio.run_process(
            [sys.executable, "-m", "actors.app", "daemon", "--state-dir", str(daemon.state_dir),
             "--port", "0"], capture_stdout=True, capture_stderr=True, check=False)
    assert second.returncode == 1
    message = second.stderr.decode().strip()
    assert str(daemon.info["pid"]) in message and "Traceback" not in message
    assert json.loads((daemon.state_dir / "daemon.json").read_text()) == daemon.info


async def test_set_model_reaches_the_harness_and_survives_a_restart(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                               model="small"))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        first = await client.events_until(sid, lambda f: _kind(f) == "init")
        assert first[-1]["event"]["model"] == "small"
        assert await client.ok("session.set_model", session_id=sid, model="large") == {}
        assert (await client.ok("session.get", session_id=sid))["session"]["model"] == "large"
        default = (await client.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]
        await client.ok("session.subscribe", session_id=default["id"])
        await client.events_until(default["id"], lambda f: _kind(f) == "init")
        assert (await client.ok("session.get", session_id=default["id"]))["session"]["model"] == "fake-1"
        await client.ok("session.prompt", session_id=sid, text="/crash")
        again = await client.events_until(sid, lambda f: _kind(f) == "init")
        assert again[-1]["event"]["model"] == "large"


async def test_a_second_signal_kills_children_at_once(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[sessions]\nclose_timeout = 120.0\n")
    daemon = await start_daemon(tmp_path / "state", config=str(config))
    async with raw_client(daemon) as client:
        stubborn = "trap '' TERM; exec 0<&-; while :; do sleep 1; done"
        info = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                                options={"script": stubborn}))["session"]
    daemon.process.send_signal(signal.SIGTERM)
    with trio.fail_after(20):
        while (daemon.state_dir / "daemon.json").exists():  # the graceful shutdown has begun
            await trio.sleep(0.05)
    daemon.process.send_signal(signal.SIGTERM)
    with trio.fail_after(20):
        await daemon.process.wait()
    assert wait_gone([info["pid"]], timeout=5) == []


async def test_a_missing_binary_is_harness_unavailable_and_leaves_nothing(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        for harness in ("claude", "codex"):
            reply = await client.call("session.create", harness=harness, cwd=str(tmp_path),
                                      options={"binary": str(tmp_path / "no-such-cli")})
            assert reply["type"] == "error" and reply["code"] == "harness_unavailable", reply
        bad_log = await client.call("session.create", harness="fake", cwd=str(tmp_path),
                                    options={"log_path": str(tmp_path / "missing-dir" / "f.ndjson")})
        assert bad_log["code"] == "bad_request"
        assert (await client.ok("session.list"))["sessions"] == []
    assert not any((daemon.state_dir / "sessions").iterdir())


async def test_log_path_records_every_frame_in_and_out(daemon: DaemonProc, tmp_path: Path) -> None:
    frames = tmp_path / "frames.ndjson"
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                               options={"log_path": str(frames)}, prompt="hi"))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        await client.events_until(sid, lambda f: _kind(f) == "result")
        await client.ok("session.close", session_id=sid)
    assert stat.S_IMODE(frames.stat().st_mode) == 0o600
    lines = [json.loads(line) for line in frames.read_text().splitlines()]
    assert lines[0]["dir"] in ("in", "out")
    assert {"dir": "out", "frame": {"type": "user", "text": "hi"}} in [
        {"dir": r["dir"], "frame": r["frame"]} for r in lines]
    inbound = [r["frame"]["type"] for r in lines if r["dir"] == "in"]
    assert inbound[0] == "init" and "result" in inbound
    assert all(set(r) == {"ts", "dir", "pid", "frame"} for r in lines)


async def test_secrets_a_child_prints_are_masked_in_the_daemon_log(daemon: DaemonProc, tmp_path: Path) -> None:
    script = 'echo "token is $SECRET_TOKEN" >&2; exec python3 -m actors.fake.child'
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                               env={"SECRET_TOKEN": "hunter2-very-secret"},
                               options={"script": script}))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        await client.events_until(sid, lambda f: _kind(f) == "init")
        await client.ok("session.close", session_id=sid)
    logs = "".join(p.read_text(errors="replace") for p in daemon.state_dir.glob("*.log"))
    logs += (daemon.state_dir / "test-daemon.out").read_text(errors="replace")
    assert "token is ***" in logs
    assert "hunter2-very-secret" not in logs
