"""The real Codex CLI through a real daemon, offline: every scenario a client relies on.

A daemon process (``vendor_rig.daemon_session``) runs ``codex app-server`` sessions whose model
provider is the fake OpenAI server of this test process (``tests.fakes.openai_server`` on
127.0.0.1); the raw protocol client checks the normalized events every subscriber sees. Covered:
a shell tool call that creates a file, approvals answered allow and deny by a second client, an
interrupt during a stalled turn, a steer that reaches the next model request, a held prompt and
three turns on one process, SIGKILL of the Codex child followed by a restart that resumes the
thread (the next model request carries the earlier turns, and approval ids stay unique), and a
graceful close that leaves no process behind (nor does the daemon when it stops after any test).

Also: interrupting a turn with an open approval decides it exactly once. Run inside
``.ci/vendor-netns`` (a loopback-only network namespace), the last test checks that loopback is
the only interface. Skipped when no Codex binary is installed, unless ``CI`` is set (then a
missing Codex fails).
"""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.fakes.codex_offline import INSTALL_HINT, KEY_ENV, codex_binary, offline_args, offline_env
from tests.fakes.openai_server import Exec, FakeOpenAI, Recorded, Stall, Text

from .daemonproc import raw_client, wait_gone
from .vendor_rig import Rig, close_and_check_gone, cmdline, daemon_session, family, is_kind, marked, of

BINARY = codex_binary()
pytestmark = [pytest.mark.vendor, pytest.mark.skipif(
    BINARY is None and not os.environ.get("CI"), reason=f"codex is not installed ({INSTALL_HINT})")]

TIMEOUT = 120
MODEL = "gpt-5.5"


def user_texts(request: Recorded) -> list[str]:
    """The user message texts in a recorded model request, in order."""
    return [part["text"] for item in request.body["input"]
            if item.get("type") == "message" and item["role"] == "user"
            for part in item["content"] if part.get("type") == "input_text"]


def tool_outputs(request: Recorded) -> list[str]:
    return [str(item["output"]) for item in request.body["input"]
            if item.get("type") == "function_call_output"]


def _binary() -> str:
    if BINARY is None:
        pytest.fail(f"CI is set but codex is not installed ({INSTALL_HINT})")
    return BINARY


def create_params(tmp: Path, port: int, **extra: Any) -> dict[str, Any]:
    """``session.create`` params for an offline Codex session in ``tmp/work``."""
    for name in ("work", "home", "codex_home"):
        (tmp / name).mkdir(exist_ok=True)
    return {"harness": "codex", "cwd": str(tmp / "work"), "model": MODEL,
            "options": {"binary": _binary(), "home": str(tmp / "codex_home"),
                        "extra_args": offline_args(port)},
            "env": {KEY_ENV: "test-key", "HOME": str(tmp / "home"),
                    **offline_env(tmp / "codex_home")},
            "permissions": {"mode": "auto_edit"}, **extra}


@asynccontextmanager
async def codex_session(tmp: Path, server: FakeOpenAI, **extra: Any) -> AsyncIterator[Rig]:
    """A daemon with one subscribed Codex session whose thread is open (``init`` seen); the fake
    model server runs in this process. The daemon is stopped after, leaving no marked process."""
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        async with daemon_session(tmp / "state", create_params(tmp, port, **extra),
                                  timeout=TIMEOUT, ready=is_kind("init")) as rig:
            yield rig
        nursery.cancel_scope.cancel()


async def test_a_shell_tool_call_creates_the_file(tmp_path: Path) -> None:
    server = FakeOpenAI([Exec(cmd="printf made > made.txt && echo created", call_id="call_mk"),
                         Text(text="Created it.")])
    with trio.fail_after(TIMEOUT):
        async with codex_session(tmp_path, server) as rig:
            events = await rig.turn("create made.txt")
            assert (rig.work / "made.txt").read_text() == "made"
            tools = of(events, "tool")
            assert [(t["kind"], t["phase"]) for t in tools] == [
                ("exec", "started"), ("exec", "completed")]
            assert "printf made > made.txt" in tools[0]["input"]["command"]
            assert (tools[1]["output"], tools[1]["is_error"]) == ("created\n", False)
            assert tools[0]["call_id"] == tools[1]["call_id"]
            assert _said(events) == "Created it."
            (result,) = of(events, "result")
            assert (result["stop_reason"], result["is_error"]) == ("end_turn", False)
            assert result["usage"]["output_tokens"] == 20  # two model calls of 10
            assert is_kind("status", state="running")(of(events, "status")[-1])
            assert await rig.until(is_kind("status")) == [
                {"type": "status", "state": "idle", "stalled": False}]
            assert "created" in tool_outputs(server.responses()[1])[0]
            assert server.responses()[0].headers["authorization"] == "Bearer test-key"
            # The key reached Codex through the session's env, and nothing of the daemon's.
            written = [f for f in (tmp_path / "state").rglob("*") if f.is_file()
                       and b"test-key" in f.read_bytes()]
            assert written == []


async def test_in_ask_mode_every_command_asks_and_allow_and_deny_both_work(tmp_path: Path) -> None:
    server = FakeOpenAI([Exec(cmd="touch allowed.txt", call_id="c_allow"), Text(text="Allowed."),
                         Exec(cmd="touch denied.txt", call_id="c_deny"), Text(text="Denied.")])
    with trio.fail_after(TIMEOUT):
        async with codex_session(tmp_path, server, permissions={"mode": "ask"}) as rig:
            for text, decision, name in (("one", "allow", "allowed.txt"), ("two", "deny", "denied.txt")):
                await rig.prompt(text)
                asked = (await rig.until(is_kind("permission")))[-1]
                assert asked["kind"] == "exec" and name in asked["input"]["command"]
                await rig.client.ok("session.permission", session_id=rig.sid,
                                    permission_id=asked["permission_id"], decision=decision)
                events = await rig.until(is_kind("result"))
                assert of(events, "result")[0]["stop_reason"] == "end_turn"
                assert (rig.work / name).exists() == (decision == "allow")


async def test_approvals_are_answered_by_a_second_client(tmp_path: Path) -> None:
    server = FakeOpenAI([
        Exec(cmd="touch allowed.txt", sandbox_permissions="require_escalated", justification="ok?"),
        Text(text="Done."),
        Exec(cmd="touch denied.txt", sandbox_permissions="require_escalated", justification="ok?"),
        Text(text="Not done."),
    ])
    with trio.fail_after(TIMEOUT):
        async with codex_session(tmp_path, server) as rig:
            async with raw_client(rig.daemon) as other:
                other_id = other.frames[0]["connection_id"]
                await other.ok("session.subscribe", session_id=rig.sid)
                asked: list[str] = []
                for text, decision in (("touch allowed.txt", "allow"),
                                       ("touch denied.txt", "deny")):
                    assert await rig.prompt(text) == "prompted"
                    ask = (await rig.until(is_kind("permission")))[-1]
                    assert (await rig.until(is_kind("permission"), other))[-1] == ask
                    assert (ask["tool"], ask["kind"]) == ("shell", "exec")
                    assert text in ask["input"]["command"]
                    asked.append(ask["permission_id"])
                    state = await rig.info()
                    assert state["state"] == "waiting"
                    await other.ok("session.permission", session_id=rig.sid,
                                   permission_id=ask["permission_id"], decision=decision)
                    decided = {"permission_id": ask["permission_id"], "decision": decision,
                               "by": other_id, "by_name": "e2e"}
                    for client in (rig.client, other):
                        seen = (await rig.until(is_kind("permission_decided"), client))[-1]
                        assert seen == {"type": "permission_decided", **decided}
                    events = await rig.until(is_kind("result"))
                    assert of(events, "result")[0]["stop_reason"] == "end_turn"
                    again = await other.call("session.permission", session_id=rig.sid,
                                             permission_id=ask["permission_id"], decision="allow")
                    assert again["code"] == "already_decided"
                assert len(set(asked)) == 2
    assert (tmp_path / "work" / "allowed.txt").exists()
    assert not (tmp_path / "work" / "denied.txt").exists()
    assert "rejected" in tool_outputs(server.responses()[3])[-1]


async def test_interrupt_during_a_slow_turn(tmp_path: Path) -> None:
    server = FakeOpenAI([Stall(text="Thinking"), Text(text="After the interrupt.")])
    with trio.fail_after(TIMEOUT):
        async with codex_session(tmp_path, server) as rig:
            assert await rig.prompt("go slowly") == "prompted"
            await rig.until(is_kind("assistant"))
            await server.wait_for(lambda: server.stalled == 1)
            await rig.client.ok("session.interrupt", session_id=rig.sid)
            (result,) = of(await rig.until(is_kind("result")), "result")
            assert (result["stop_reason"], result["is_error"]) == ("interrupted", False)
            await server.wait_for(lambda: server.stalled == 0)  # Codex dropped the stream
            events = await rig.turn("still there?")
            assert of(events, "result")[0]["stop_reason"] == "end_turn"
            assert _said(events) == "After the interrupt."


async def test_a_steer_reaches_the_next_model_request(tmp_path: Path) -> None:
    server = FakeOpenAI([Stall(text="Working"), Text(text="With pears.")])
    with trio.fail_after(TIMEOUT):
        async with codex_session(tmp_path, server) as rig:
            assert await rig.prompt("start") == "prompted"
            await rig.until(is_kind("assistant"))
            await server.wait_for(lambda: server.stalled == 1)
            assert await rig.prompt("mention pears") == "steered"
            events = await rig.until(is_kind("result"))
            assert of(events, "user") == [
                {"type": "user", "text": "mention pears", "delivery": "steered"}]
            assert user_texts(server.responses()[1])[-2:] == ["start", "mention pears"]
            assert of(events, "result")[0]["stop_reason"] == "end_turn"
            assert _said(events).endswith("With pears.")


async def test_a_held_prompt_and_three_turns_on_one_process(tmp_path: Path) -> None:
    server = FakeOpenAI([Text(text="One."), Text(text="Two."), Text(text="Three.")])
    with trio.fail_after(TIMEOUT):
        # The create prompt arrives while Codex is still in its handshake: it is held.
        async with codex_session(tmp_path, server, prompt="one") as rig:
            events = await rig.until(is_kind("result"))
            assert of(events, "user") == [{"type": "user", "text": "one", "delivery": "held"}]
            pid = await rig.pid()
            for text in ("two", "three"):
                events = await rig.turn(text)
                assert of(events, "user") == [{"type": "user", "text": text,
                                               "delivery": "prompted"}]
                assert of(events, "result")[0]["stop_reason"] == "end_turn"
                assert await rig.pid() == pid
            info = await rig.info()
            assert (info["restarts"], info["state"]) == (0, "idle")
    requests = server.responses()
    assert len(requests) == 3
    assert user_texts(requests[2])[-3:] == ["one", "two", "three"]


async def test_sigkill_of_codex_restarts_it_and_resumes_the_thread(tmp_path: Path) -> None:
    server = FakeOpenAI([
        Exec(cmd="touch first.txt", sandbox_permissions="require_escalated", justification="1?"),
        Text(text="Noted: apricot."),
        Exec(cmd="touch second.txt", sandbox_permissions="require_escalated", justification="2?"),
        Text(text="Apricot."),
    ])
    with trio.fail_after(TIMEOUT):
        async with codex_session(tmp_path, server) as rig:
            thread = (await rig.info())["vendor_session_id"]
            assert thread
            assert await rig.prompt("remember apricot") == "prompted"
            first_ask = (await rig.until(is_kind("permission")))[-1]
            await rig.client.ok("session.permission", session_id=rig.sid,
                                permission_id=first_ask["permission_id"], decision="allow")
            await rig.until(is_kind("result"))
            old = await rig.pid()
            before = family(old)
            os.kill(old, signal.SIGKILL)
            events = await rig.until(is_kind("init"))
            kinds = [e["type"] for e in events]
            (exit_event,) = of(events, "exit")
            assert (exit_event["reason"], exit_event["signal"]) == ("crashed", "SIGKILL")
            assert of(events, "restarted")[0]["attempt"] == 1
            assert kinds.index("exit") < kinds.index("restarted") < kinds.index("init")
            assert of(events, "init")[0]["vendor_session_id"] == thread
            assert wait_gone(before) == []
            new = await rig.pid()
            assert new != old

            assert await rig.prompt("which word?") == "prompted"
            ask = (await rig.until(is_kind("permission")))[-1]
            assert ask["permission_id"] != first_ask["permission_id"]
            await rig.client.ok("session.permission", session_id=rig.sid,
                                permission_id=ask["permission_id"], decision="allow")
            events = await rig.until(is_kind("result"))
            assert of(events, "result")[0]["stop_reason"] == "end_turn"
            assert _said(events) == "Apricot."
            info = await rig.info()
            assert (info["restarts"], info["pid"]) == (1, new)
    assert (tmp_path / "work" / "first.txt").exists()
    assert (tmp_path / "work" / "second.txt").exists()
    resumed = server.responses()[2]
    assert user_texts(resumed)[-2:] == ["remember apricot", "which word?"]
    assert any(item.get("type") == "message" and item["role"] == "assistant"
               for item in resumed.body["input"])


async def test_close_leaves_no_process(tmp_path: Path) -> None:
    # A command left running in the background, then a model request held open: close mid-turn.
    server = FakeOpenAI([Exec(cmd="sleep 300", yield_time_ms=250), Stall(text="Waiting")])
    state = tmp_path / "state"
    with trio.fail_after(TIMEOUT):
        async with codex_session(tmp_path, server) as rig:
            assert await rig.prompt("sleep in the background") == "prompted"
            await server.wait_for(lambda: server.stalled == 1)
            pid = await rig.pid()
            before = family(pid)
            assert any("sleep" in cmdline(p) for p in before)
            assert pid in marked(state)
            await close_and_check_gone(rig, state, before)


async def test_interrupt_with_an_open_approval_decides_it_once(tmp_path: Path) -> None:
    server = FakeOpenAI([Exec(cmd="touch never.txt", sandbox_permissions="require_escalated",
                              justification="may I?"), Text(text="Later.")])
    with trio.fail_after(TIMEOUT):
        async with codex_session(tmp_path, server) as rig:
            assert await rig.prompt("touch never.txt") == "prompted"
            ask = (await rig.until(is_kind("permission")))[-1]
            await rig.client.ok("session.interrupt", session_id=rig.sid)
            events = await rig.until(is_kind("result"))
            events += await rig.until(is_kind("status", state="idle"))
            assert of(events, "permission_decided") == [
                {"type": "permission_decided", "permission_id": ask["permission_id"],
                 "decision": "cancelled", "by": "session", "by_name": "session"}]
            assert of(events, "result")[0]["stop_reason"] == "interrupted"
            events = await rig.turn("again")
            assert of(events, "permission_decided") == []
    assert not (tmp_path / "work" / "never.txt").exists()


@pytest.mark.skipif(os.environ.get("CORRAL_NETNS") != "loopback",
                    reason="not inside .ci/vendor-netns")
def test_the_namespace_has_loopback_only() -> None:
    assert [name for _, name in socket.if_nameindex()] == ["lo"]


def _said(events: list[dict[str, Any]]) -> str:
    """The assistant text of a turn as a client shows it: every delta appended."""
    return "".join(e["text"] for e in of(events, "assistant"))
