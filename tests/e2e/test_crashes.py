"""Crashed harness children are restarted; a crashed daemon loses no event and leaves no orphan."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import psutil
import pytest

from .daemonproc import DaemonProc, raw_client, start_daemon, stop_daemon, wait_gone


@pytest.fixture
def daemon(placed_daemon: DaemonProc) -> DaemonProc:
    """This module's daemon tests run on every placement backend (``placed_daemon``)."""
    return placed_daemon


def _kind(frame: dict[str, Any]) -> str:
    return str(frame["event"]["type"])


async def test_sigkill_of_the_harness_child_restarts_it_and_the_session_goes_on(
        daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        info = (await client.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]
        sid = info["id"]
        await client.ok("session.subscribe", session_id=sid)
        await client.events_until(sid, lambda f: _kind(f) == "init")
        pid = (await client.ok("session.get", session_id=sid))["session"]["pid"]
        assert pid
        os.kill(pid, signal.SIGKILL)
        frames = await client.events_until(sid, lambda f: _kind(f) == "init")
        kinds = [_kind(f) for f in frames]
        exit_event = next(f["event"] for f in frames if _kind(f) == "exit")
        assert exit_event["reason"] == "crashed" and exit_event["signal"] == "SIGKILL"
        assert kinds.index("exit") < kinds.index("restarted") < kinds.index("init")
        restarted = next(f["event"] for f in frames if _kind(f) == "restarted")
        assert restarted["attempt"] == 1
        assert (await client.ok("session.prompt", session_id=sid, text="still there?"))["delivery"] == "prompted"
        turn = await client.events_until(sid, lambda f: _kind(f) == "result")
        text = "".join(f["event"]["text"] for f in turn if _kind(f) == "assistant")
        assert text == "echo: still there?"
        session = (await client.ok("session.get", session_id=sid))["session"]
        assert session["restarts"] == 1 and session["pid"] not in (None, pid)
        assert session["state"] == "idle"


async def test_a_crash_loop_ends_in_failed_with_an_error(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                               options={"script": "exit 7"}))["session"]["id"]
        await client.ok("session.subscribe", session_id=sid)
        frames = await client.events_until(
            sid, lambda f: _kind(f) == "status" and f["event"]["state"] == "failed", timeout=60)
        kinds = [_kind(f) for f in frames]
        assert kinds.count("restarted") == 3
        assert kinds.count("exit") == 4
        assert all(f["event"]["exit_code"] == 7 for f in frames if _kind(f) == "exit")
        error = [f["event"] for f in frames if _kind(f) == "error"][-1]
        assert error["class"] == "launch" and error["code"]
        reply = await client.call("session.prompt", session_id=sid, text="hello?")
        assert reply["type"] == "error" and reply["code"] == "session_closed"
        assert (await client.ok("session.get", session_id=sid))["session"]["state"] == "failed"


async def test_sigkill_of_the_daemon_loses_nothing_and_leaves_no_orphan(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = await start_daemon(state)
    seen: dict[str, list[dict[str, Any]]] = {}
    try:
        async with raw_client(first) as client:
            sids = []
            for n in range(2):
                sid = (await client.ok("session.create", harness="fake", cwd=str(tmp_path),
                                       options={"script": _GRANDCHILD_SCRIPT if n else
                                                "exec python3 -m actors.fake.child"}))["session"]["id"]
                sids.append(sid)
                await client.ok("session.subscribe", session_id=sid)
            await client.ok("session.prompt", session_id=sids[0], text="/ask echo hi")
            await client.events_until(sids[0], lambda f: _kind(f) == "permission")
            if not any(f.get("session_id") == sids[1] and f["type"] == "event" and _kind(f) == "init"
                       for f in client.frames):
                await client.events_until(sids[1], lambda f: _kind(f) == "init")
            for sid in sids:
                seen[sid] = [f for f in client.frames if f["type"] == "event" and f["session_id"] == sid]
            assert any(_kind(f) == "init" for f in seen[sids[1]])
        children = [p.pid for p in first.descendants()]
        assert len(children) >= 3
    finally:
        first.process.kill()
        await first.process.wait()
    # The children outlive the daemon until the next boot reconciles them.
    second = await start_daemon(state)
    try:
        assert wait_gone(children) == []
        async with raw_client(second) as client:
            listed = {s["id"]: s for s in (await client.ok("session.list"))["sessions"]}
            for sid, before in seen.items():
                assert listed[sid]["state"] == "closed"
                await client.ok("session.subscribe", session_id=sid, from_seq=1)
                after = await client.events_until(
                    sid, lambda f: _kind(f) == "exit" and f["event"]["reason"] == "daemon_restarted")
                assert after[: len(before)] == before
            first_log = [json.loads(line) for line in
                         (state / "sessions" / sids[0] / "events.jsonl").read_text().splitlines()]
            cancelled = [f["event"] for f in first_log if _kind(f) == "permission_decided"]
            assert cancelled == [{"type": "permission_decided", "permission_id": "p1",
                                  "decision": "cancelled", "by": "session", "by_name": "session"}]
    finally:
        assert await stop_daemon(second) == 0
    strays = [p for p in psutil.process_iter(["environ"])
              if (p.info.get("environ") or {}).get("CORRAL_STATE_DIR") == os.path.realpath(state)]
    assert strays == []


_GRANDCHILD_SCRIPT = (
    "python3 -c 'import os,time; os.setsid(); time.sleep(300)' & "
    "exec python3 -m actors.fake.child"
)
