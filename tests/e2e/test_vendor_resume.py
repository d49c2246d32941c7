"""The real Claude Code and Codex CLIs survive a daemon SIGKILL: ``session.resume`` and
``[sessions] resume_on_boot`` reopen the session and the vendor conversation goes on (the next
model request carries the turns from before the kill).

``session.resume`` gets the session's env again (env values are never stored); with
``resume_on_boot`` the env comes from the config's ``[harness.NAME] env`` table, as it would
for a user whose key lives in the daemon's environment or configuration.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.fakes.anthropic_server import FakeAnthropic, text
from tests.fakes.claude_offline import OFFLINE_ENV, claude_binary
from tests.fakes.codex_offline import KEY_ENV, codex_binary, offline_args, offline_env
from tests.fakes.openai_server import FakeOpenAI, Text

from .daemonproc import DaemonProc, RawClient, raw_client, start_daemon, stop_daemon, wait_gone
from .test_claude_e2e import flushed, mentions
from .test_codex_e2e import user_texts
from .vendor_rig import family, marked_gone

pytestmark = [pytest.mark.vendor]
TIMEOUT = 110

Frame = dict[str, Any]


def _need(binary: str | None, name: str) -> str:
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {name} is not installed")
        pytest.skip(f"{name} is not installed")
    return binary


async def _until(client: RawClient, sid: str, kind: str, **fields: Any) -> list[Frame]:
    frames = await client.events_until(
        sid, lambda f: f["type"] == "event" and f["event"]["type"] == kind
        and all(f["event"].get(k) == v for k, v in fields.items()), timeout=TIMEOUT)
    return [f["event"] for f in frames]


def _said(events: list[Frame]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "assistant")


async def _kill(daemon: DaemonProc) -> None:
    daemon.process.kill()
    await daemon.process.wait()


def _claude(tmp: Path, port: int) -> tuple[dict[str, Any], dict[str, str]]:
    """``session.create`` params (without env) and the env, for an offline Claude session."""
    for name in ("work", "home"):
        (tmp / name).mkdir(exist_ok=True)
    env = {**OFFLINE_ENV, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "HOME": str(tmp / "home")}
    params = {"harness": "claude", "cwd": str(tmp / "work"), "permissions": {"mode": "ask"},
              "options": {"binary": _need(claude_binary(), "claude"), "home": str(tmp / "home" / ".claude")}}
    return params, env


def _codex(tmp: Path, port: int) -> tuple[dict[str, Any], dict[str, str]]:
    for name in ("work", "home", "codex_home"):
        (tmp / name).mkdir(exist_ok=True)
    env = {KEY_ENV: "test-key", "HOME": str(tmp / "home"), **offline_env(tmp / "codex_home")}
    params = {"harness": "codex", "cwd": str(tmp / "work"), "model": "gpt-5.5",
              "permissions": {"mode": "auto_edit"},
              "options": {"binary": _need(codex_binary(), "codex"), "home": str(tmp / "codex_home"),
                          "extra_args": offline_args(port)}}
    return params, env


async def _first_turn(client: RawClient, params: dict[str, Any], env: dict[str, str] | None,
                      tmp: Path) -> tuple[str, int]:
    created = await client.ok("session.create", **params, **({"env": env} if env else {}))
    sid: str = created["session"]["id"]
    await client.ok("session.subscribe", session_id=sid)
    await _until(client, sid, "status", state="idle")
    await client.ok("session.prompt", session_id=sid, text="remember apricot")
    events = await _until(client, sid, "result")
    assert _said(events) == "Noted: apricot."
    info = (await client.ok("session.get", session_id=sid))["session"]
    if params["harness"] == "claude":
        await flushed(tmp, info["vendor_session_id"], "Noted: apricot.")
    return sid, int(info["pid"])


async def _second_turn(client: RawClient, sid: str, last_seq: int) -> list[Frame]:
    await client.ok("session.subscribe", session_id=sid, from_seq=last_seq + 1)
    events = await _until(client, sid, "status", state="idle")
    kinds = [e["type"] for e in events]
    assert kinds.index("exit") < kinds.index("restarted")
    assert [e["reason"] for e in events if e["type"] == "exit"] == ["daemon_restarted"]
    assert [e for e in events if e["type"] == "restarted"] == [
        {"type": "restarted", "attempt": 1, "reason": "resumed"}]
    await client.ok("session.prompt", session_id=sid, text="which word?")
    return await _until(client, sid, "result")


@pytest.mark.parametrize("harness", ["claude", "codex"])
async def test_session_resume_after_a_daemon_sigkill(tmp_path: Path, harness: str) -> None:
    state = tmp_path / "state"
    if harness == "claude":
        server: Any = FakeAnthropic([text("Noted: apricot."), text("Apricot.")])
    else:
        server = FakeOpenAI([Text(text="Noted: apricot."), Text(text="Apricot.")])
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            params, env = (_claude if harness == "claude" else _codex)(tmp_path, port)
            first = await start_daemon(state)
            try:
                async with raw_client(first) as client:
                    sid, pid = await _first_turn(client, params, env, tmp_path)
                    last_seq = (await client.ok("session.get", session_id=sid))["session"]["last_seq"]
                    old = family(pid)
            finally:
                await _kill(first)
            second = await start_daemon(state)
            try:
                assert wait_gone(old) == []  # the boot reconciled what the dead daemon left
                async with raw_client(second) as client:
                    assert (await client.ok("session.get", session_id=sid))["session"]["state"] == "closed"
                    resumed = (await client.ok("session.resume", session_id=sid, env=env))["session"]
                    assert resumed["id"] == sid
                    events = await _second_turn(client, sid, last_seq)
                    assert _said(events) == "Apricot."
            finally:
                assert await stop_daemon(second) == 0
            nursery.cancel_scope.cancel()
    _check_history(server, harness)
    assert marked_gone(state) == []


@pytest.mark.parametrize("harness", ["claude", "codex"])
async def test_resume_on_boot_after_a_daemon_sigkill(tmp_path: Path, harness: str) -> None:
    state = tmp_path / "state"
    if harness == "claude":
        server: Any = FakeAnthropic([text("Noted: apricot."), text("Apricot.")])
    else:
        server = FakeOpenAI([Text(text="Noted: apricot."), Text(text="Apricot.")])
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            params, env = (_claude if harness == "claude" else _codex)(tmp_path, port)
            config = tmp_path / "corral.toml"
            config.write_text(f"[sessions]\nresume_on_boot = true\n\n[harness.{harness}.env]\n"
                              + "".join(f"{k} = {json.dumps(v)}\n" for k, v in env.items()))
            first = await start_daemon(state, config=str(config))
            try:
                async with raw_client(first) as client:
                    sid, pid = await _first_turn(client, params, None, tmp_path)
                    last_seq = (await client.ok("session.get", session_id=sid))["session"]["last_seq"]
                    old = family(pid)
            finally:
                await _kill(first)
            second = await start_daemon(state, config=str(config))
            try:
                assert wait_gone(old) == []
                async with raw_client(second) as client:
                    events = await _second_turn(client, sid, last_seq)
                    assert _said(events) == "Apricot."
            finally:
                assert await stop_daemon(second) == 0
            nursery.cancel_scope.cancel()
    _check_history(server, harness)


def _check_history(server: Any, harness: str) -> None:
    """The model request of the turn after the kill carries the turn from before it."""
    if harness == "claude":
        resumed = server.message_requests[-1]
        assert mentions(resumed, "remember apricot", "which word?") == ["remember apricot", "which word?"]
        assert mentions(resumed, "Noted: apricot.", role="assistant") == ["Noted: apricot."]
    else:
        resumed = server.responses()[-1]
        assert user_texts(resumed)[-2:] == ["remember apricot", "which word?"]
