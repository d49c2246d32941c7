"""``session.resume`` and ``[sessions] resume_on_boot`` through a real daemon (fake harness).

A resumed session keeps its id; its log continues at the next seq with ``restarted {reason:
"resumed"}``; a new child runs; prompts work again. After a daemon SIGKILL the next daemon closes
what was left open (``exit {daemon_restarted}``) and, with ``resume_on_boot``, brings it back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil

from .daemonproc import DaemonProc, RawClient, raw_client, start_daemon, stop_daemon, wait_gone

Frame = dict[str, Any]


def _kind(frame: Frame) -> str:
    return str(frame["event"]["type"])


async def _turn(client: RawClient, sid: str, text: str) -> list[Frame]:
    assert (await client.ok("session.prompt", session_id=sid, text=text))["delivery"] == "prompted"
    return await client.events_until(sid, lambda f: f["type"] == "event" and _kind(f) == "result")


def _said(frames: list[Frame]) -> str:
    return "".join(f["event"]["text"] for f in frames if f["type"] == "event" and _kind(f) == "assistant")


async def _new_fake(client: RawClient, tmp_path: Path) -> str:
    sid: str = (await client.ok("session.create", harness="fake", cwd=str(tmp_path)))["session"]["id"]
    await client.ok("session.subscribe", session_id=sid)
    await client.events_until(sid, lambda f: _kind(f) == "status" and f["event"]["state"] == "idle")
    return sid


async def test_a_closed_session_resumes_with_its_id_and_its_log_continues(daemon: DaemonProc,
                                                                          tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        sid = await _new_fake(client, tmp_path)
        assert _said(await _turn(client, sid, "hello")) == "echo: hello"
        first_pid = (await client.ok("session.get", session_id=sid))["session"]["pid"]
        await client.ok("session.close", session_id=sid)
        await client.events_until(sid, lambda f: _kind(f) == "status" and f["event"]["state"] == "closed")
        closed = (await client.ok("session.get", session_id=sid))["session"]
        assert closed["state"] == "closed" and closed["pid"] is None

        resumed = (await client.ok("session.resume", session_id=sid))["session"]
        assert resumed["id"] == sid and resumed["state"] in ("starting", "idle")
        frames = await client.events_until(
            sid, lambda f: _kind(f) == "status" and f["event"]["state"] == "idle")
        assert frames[0]["seq"] == closed["last_seq"] + 1  # the log goes on, gapless
        assert frames[0]["event"] == {"type": "restarted", "attempt": 1, "reason": "resumed"}
        info = (await client.ok("session.get", session_id=sid))["session"]
        assert info["pid"] not in (None, first_pid) and info["restarts"] == 1
        assert _said(await _turn(client, sid, "again")) == "echo: again"

        # the whole history replays to a new subscriber, one seq after another
        async with raw_client(daemon) as other:
            last = (await other.ok("session.subscribe", session_id=sid, from_seq=1))["last_seq"]
            replay = await other.events_until(sid, lambda f: f["seq"] == last)
            assert [f["seq"] for f in replay] == list(range(1, last + 1))


async def test_what_cannot_be_resumed_gets_a_typed_error(daemon: DaemonProc, tmp_path: Path) -> None:
    async with raw_client(daemon) as client:
        sid = await _new_fake(client, tmp_path)
        busy = await client.call("session.resume", session_id=sid)
        assert (busy["type"], busy["code"]) == ("error", "session_busy")
        unknown = await client.call("session.resume", session_id="s-nope")
        assert (unknown["type"], unknown["code"]) == ("error", "unknown_session")
        await client.ok("session.close", session_id=sid)
        bad = await client.call("session.resume", session_id=sid, env={"K": "a\u0000b"})
        assert (bad["type"], bad["code"]) == ("error", "bad_request") and "env" in bad["message"]
        wrong = await client.call("session.resume", session_id=sid, env=["not", "a", "map"])
        assert (wrong["type"], wrong["code"]) == ("error", "bad_request")
        assert (await client.ok("session.get", session_id=sid))["session"]["state"] == "closed"


async def test_after_a_daemon_sigkill_resume_on_boot_brings_sessions_back(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = tmp_path / "corral.toml"
    config.write_text("[sessions]\nresume_on_boot = true\n")
    first = await start_daemon(state, config=str(config))
    try:
        async with raw_client(first) as client:
            sids = [await _new_fake(client, tmp_path) for _ in range(2)]
            await _turn(client, sids[0], "before")
            old = [(await client.ok("session.get", session_id=s))["session"] for s in sids]
    finally:
        first.process.kill()
        await first.process.wait()
    second = await start_daemon(state, config=str(config))
    try:
        assert wait_gone([o["pid"] for o in old]) == []
        async with raw_client(second) as client:
            for sid, before in zip(sids, old, strict=True):
                await client.ok("session.subscribe", session_id=sid, from_seq=before["last_seq"] + 1)
                frames = await client.events_until(
                    sid, lambda f: _kind(f) == "status" and f["event"]["state"] == "idle")
                kinds = [_kind(f) for f in frames]
                assert kinds[:2] == ["exit", "status"] and frames[0]["event"]["reason"] == "daemon_restarted"
                assert frames[1]["event"]["state"] == "closed"
                assert frames[2]["event"] == {"type": "restarted", "attempt": 1, "reason": "resumed"}
            assert _said(await _turn(client, sids[0], "after")) == "echo: after"
            pids = [(await client.ok("session.get", session_id=s))["session"]["pid"] for s in sids]
            assert all(psutil.pid_exists(p) for p in pids)
    finally:
        assert await stop_daemon(second) == 0
    # a graceful stop closes them ("daemon_stopped"); the next daemon resumes them again
    third = await start_daemon(state, config=str(config))
    try:
        async with raw_client(third) as client:
            for sid in sids:
                await client.ok("session.subscribe", session_id=sid, from_seq=1)
                resumes = 0

                def resumed_twice_then_idle(f: Frame) -> bool:
                    nonlocal resumes
                    resumes += f["event"] == {"type": "restarted", "attempt": 2, "reason": "resumed"}
                    return resumes == 1 and _kind(f) == "status" and f["event"]["state"] == "idle"

                frames = await client.events_until(sid, resumed_twice_then_idle)
                exits = [f["event"]["reason"] for f in frames if _kind(f) == "exit"]
                assert exits == ["daemon_restarted", "closed"]
    finally:
        assert await stop_daemon(third) == 0


async def test_without_resume_on_boot_sessions_stay_closed_until_resumed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = await start_daemon(state)
    try:
        async with raw_client(first) as client:
            sid = await _new_fake(client, tmp_path)
    finally:
        first.process.kill()
        await first.process.wait()
    second = await start_daemon(state)
    try:
        async with raw_client(second) as client:
            assert (await client.ok("session.get", session_id=sid))["session"]["state"] == "closed"
            await client.ok("session.resume", session_id=sid)
            await client.ok("session.subscribe", session_id=sid)
            await client.events_until(sid, lambda f: _kind(f) == "status" and f["event"]["state"] == "idle")
            assert _said(await _turn(client, sid, "back")) == "echo: back"
    finally:
        assert await stop_daemon(second) == 0
