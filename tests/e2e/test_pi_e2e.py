"""The real pi CLI (``pi --mode rpc``) through a real daemon, offline: what a client relies on.

A daemon process (``vendor_rig.daemon_session``) runs pi sessions whose model provider is the
fake model server of this test process (``tests.fakes.model_server``, Chat Completions) on
127.0.0.1, configured through pi's ``models.json`` in ``options.home``. Covered: a bash tool
call that creates a file, permissions (corral's gate extension) denied then allowed from a second
client, an interrupt during a slow turn, a steer, a held prompt and three turns on one process,
SIGKILL of pi followed by a restart that resumes the conversation from pi's session file, and a
close that leaves no process. Skipped when pi is not installed, unless ``CI`` is set.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.fakes.model_script import call, hang, say
from tests.fakes.model_server import FakeModels, Recorded
from tests.fakes.pi_offline import INSTALL_HINT, MODEL, offline_env, pi_binary, write_home

from .daemonproc import raw_client, wait_gone
from .vendor_rig import Rig, close_and_check_gone, cmdline, daemon_session, family, is_kind, marked, of

BINARY = pi_binary()
pytestmark = [pytest.mark.vendor, pytest.mark.skipif(
    BINARY is None and not os.environ.get("CI"), reason=f"pi is not installed ({INSTALL_HINT})")]

TIMEOUT = 120


def _binary() -> str:
    if BINARY is None:
        pytest.fail(f"CI is set but pi is not installed ({INSTALL_HINT})")
    return BINARY


def create_params(tmp: Path, port: int, **extra: Any) -> dict[str, Any]:
    """``session.create`` params for an offline pi session in ``tmp/work``."""
    (tmp / "work").mkdir(exist_ok=True)
    write_home(tmp / "pi_home", port)
    return {"harness": "pi", "cwd": str(tmp / "work"), "model": MODEL,
            "options": {"binary": _binary(), "home": str(tmp / "pi_home")},
            "env": offline_env(tmp), "permissions": {"mode": "auto"}, **extra}


@asynccontextmanager
async def pi_session(tmp: Path, server: FakeModels, **extra: Any) -> AsyncIterator[Rig]:
    """A daemon with one subscribed pi session that is ready (``init`` seen)."""
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        async with daemon_session(tmp / "state", create_params(tmp, port, **extra),
                                  timeout=TIMEOUT, ready=is_kind("init")) as rig:
            yield rig
        nursery.cancel_scope.cancel()


def user_texts(request: Recorded) -> list[str]:
    """The user messages of a recorded Chat Completions request, in order."""
    texts = []
    for message in request.body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        texts.append(content if isinstance(content, str) else
                     "".join(p.get("text", "") for p in content if p.get("type") == "text"))
    return texts


def said(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in of(events, "assistant"))


async def test_a_bash_tool_call_creates_the_file(tmp_path: Path) -> None:
    server = FakeModels([call("bash", command="printf made > made.txt && echo created"),
                         say("Created it.")])
    with trio.fail_after(TIMEOUT):
        async with pi_session(tmp_path, server) as rig:
            events = await rig.turn("create made.txt")
            assert (rig.work / "made.txt").read_text() == "made"
            tools = of(events, "tool")
            assert (tools[0]["name"], tools[0]["kind"], tools[0]["phase"]) == ("bash", "exec", "started")
            assert tools[0]["input"] == {"command": "printf made > made.txt && echo created"}
            assert (tools[-1]["phase"], tools[-1]["output"], tools[-1]["is_error"]) == (
                "completed", "created\n", False)
            assert said(events) == "Created it."
            (result,) = of(events, "result")
            assert (result["stop_reason"], result["is_error"]) == ("end_turn", False)
            assert result["usage"]["input_tokens"] == 40
            assert server.model_requests()[0].headers["authorization"] == "Bearer test-key"
            written = [f for f in (tmp_path / "state").rglob("*") if f.is_file()
                       and b"test-key" in f.read_bytes()]
            assert written == []


async def test_permission_denied_then_allowed_from_a_second_client(tmp_path: Path) -> None:
    server = FakeModels([call("bash", command="touch denied.txt"), say("Not done."),
                         call("write", path="allowed.txt", content="yes"), say("Done.")])
    with trio.fail_after(TIMEOUT):
        async with pi_session(tmp_path, server, permissions={"mode": "ask"}) as rig:
            async with raw_client(rig.daemon) as other:
                other_id = other.frames[0]["connection_id"]
                await other.ok("session.subscribe", session_id=rig.sid)
                for text, decision, tool, kind in (("touch denied.txt", "deny", "bash", "exec"),
                                                   ("write allowed.txt", "allow", "write", "edit")):
                    assert await rig.prompt(text) == "prompted"
                    ask = (await rig.until(is_kind("permission")))[-1]
                    assert (await rig.until(is_kind("permission"), other))[-1] == ask
                    assert (ask["tool"], ask["kind"]) == (tool, kind)
                    assert ask["options"] == ["allow", "deny", "allow_always"]
                    assert (await rig.info())["state"] == "waiting"
                    await other.ok("session.permission", session_id=rig.sid,
                                   permission_id=ask["permission_id"], decision=decision)
                    for client in (rig.client, other):
                        seen = (await rig.until(is_kind("permission_decided"), client))[-1]
                        assert seen == {"type": "permission_decided", "decision": decision,
                                        "permission_id": ask["permission_id"], "by": other_id,
                                        "by_name": "e2e"}
                    events = await rig.until(is_kind("result"))
                    assert of(events, "result")[0]["stop_reason"] == "end_turn"
    assert not (tmp_path / "work" / "denied.txt").exists()
    assert (tmp_path / "work" / "allowed.txt").read_text() == "yes"
    denied_result = server.model_requests()[1].body["messages"][-1]
    assert denied_result["role"] == "tool" and "denied" in str(denied_result["content"])


async def test_interrupt_during_a_slow_turn(tmp_path: Path) -> None:
    server = FakeModels([hang("Thinking"), say("After the interrupt.")])
    with trio.fail_after(TIMEOUT):
        async with pi_session(tmp_path, server) as rig:
            assert await rig.prompt("go slowly") == "prompted"
            await rig.until(is_kind("assistant"))
            await server.wait_for(lambda: server.hanging == 1)
            await rig.client.ok("session.interrupt", session_id=rig.sid)
            (result,) = of(await rig.until(is_kind("result")), "result")
            assert (result["stop_reason"], result["is_error"]) == ("interrupted", False)
            await server.wait_for(lambda: server.hanging == 0)  # pi dropped the stream
            events = await rig.turn("still there?")
            assert said(events) == "After the interrupt."


async def test_a_steer_reaches_the_next_model_request(tmp_path: Path) -> None:
    # Steered while a tool runs: pi delivers it after the tool, before the next model call.
    server = FakeModels([call("bash", command="sleep 2; echo slept"), say("With pears.")])
    with trio.fail_after(TIMEOUT):
        async with pi_session(tmp_path, server) as rig:
            assert await rig.prompt("start") == "prompted"
            await rig.until(is_kind("tool", phase="started"))
            assert await rig.prompt("mention pears") == "steered"
            events = await rig.until(is_kind("result"))
            assert of(events, "user") == [
                {"type": "user", "text": "mention pears", "delivery": "steered"}]
            assert of(events, "error") == []
            assert user_texts(server.model_requests()[1])[-2:] == ["start", "mention pears"]
            assert said(events).endswith("With pears.")


async def test_a_held_prompt_and_three_turns_on_one_process(tmp_path: Path) -> None:
    server = FakeModels([say("One."), say("Two."), say("Three.")])
    with trio.fail_after(TIMEOUT):
        async with pi_session(tmp_path, server, prompt="one") as rig:
            events = await rig.until(is_kind("result"))
            assert of(events, "user") == [{"type": "user", "text": "one", "delivery": "held"}]
            pid = await rig.pid()
            for text in ("two", "three"):
                events = await rig.turn(text)
                assert of(events, "result")[0]["stop_reason"] == "end_turn"
                assert await rig.pid() == pid
            info = await rig.info()
            assert (info["restarts"], info["state"]) == (0, "idle")
    assert user_texts(server.model_requests()[2]) == ["one", "two", "three"]


async def test_sigkill_of_pi_restarts_it_and_resumes_the_conversation(tmp_path: Path) -> None:
    server = FakeModels([say("Noted: apricot."), say("Apricot.")])
    with trio.fail_after(TIMEOUT):
        async with pi_session(tmp_path, server) as rig:
            events = await rig.turn("remember apricot")
            assert said(events) == "Noted: apricot."
            session_file = (await rig.info())["vendor_session_id"]
            assert session_file.endswith(".jsonl") and os.path.exists(session_file)
            old = await rig.pid()
            before = family(old)
            os.kill(old, signal.SIGKILL)
            events = await rig.until(is_kind("init"))
            kinds = [e["type"] for e in events]
            (exit_event,) = of(events, "exit")
            assert (exit_event["reason"], exit_event["signal"]) == ("crashed", "SIGKILL")
            assert kinds.index("exit") < kinds.index("restarted") < kinds.index("init")
            assert of(events, "init")[0]["vendor_session_id"] == session_file
            assert wait_gone(before) == []
            events = await rig.turn("which word?")
            assert said(events) == "Apricot."
            info = await rig.info()
            assert info["restarts"] == 1 and info["pid"] != old
    resumed = server.model_requests()[1]
    assert user_texts(resumed) == ["remember apricot", "which word?"]
    assert any(m["role"] == "assistant" for m in resumed.body["messages"])


async def test_close_leaves_no_process(tmp_path: Path) -> None:
    server = FakeModels([call("bash", command="sleep 300 & echo started"), hang("Waiting")])
    state = tmp_path / "state"
    with trio.fail_after(TIMEOUT):
        async with pi_session(tmp_path, server) as rig:
            assert await rig.prompt("sleep in the background") == "prompted"
            await server.wait_for(lambda: server.hanging == 1)
            pid = await rig.pid()
            before = family(pid)
            assert cmdline(pid) and pid in marked(state)
            await close_and_check_gone(rig, state, before)
