"""The native harness through a real daemon, against the fake model server, for each provider.

A daemon process (``vendor_rig.daemon_session``) runs ``python -m actors.native`` workers whose
model is the fake server of this test process (``tests.fakes.model_server``, which speaks the
OpenAI Responses, Chat Completions, Anthropic Messages and Gemini APIs from one neutral script),
reached through the session's ``options.base_url`` with a key from the session's ``env``. The raw
protocol client checks what every subscriber sees. Covered for each provider: a turn that writes
a file through ``write``; a permission denied, then one allowed, by a second client; an
interrupt during a slow stream (whose HTTP connection the worker closes); a steer that reaches
the next model request; three turns on one worker; SIGKILL of the worker, after which the
session restarts it and the next model request carries the earlier turns; a close mid-turn
that leaves no process (nor does the daemon when it stops after any test). For ``openai`` only:
``options.resume`` continues a native session in a new corral session.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from supervisor.sandbox import landlock
from tests.fakes.model_script import Call, Turn, call, hang, say
from tests.fakes.model_server import FakeModels, Recorded

from .daemonproc import raw_client, wait_gone
from .vendor_rig import Rig, close_and_check_gone, cmdline, daemon_session, family, is_kind, marked, of

TIMEOUT = 120
KEY = "sk-native-e2e-0123456789"
KINDS = ["openai", "openai-chat", "anthropic", "gemini"]
KEY_ENVS = {"openai": "OPENAI_API_KEY", "openai-chat": "OPENAI_API_KEY",
            "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}

every_provider = pytest.mark.parametrize("kind", KINDS)


def create_params(tmp: Path, kind: str, port: int, **extra: Any) -> dict[str, Any]:
    """``session.create`` params for a native session of provider ``kind`` on the fake server."""
    (tmp / "work").mkdir(exist_ok=True)
    base = f"http://127.0.0.1:{port}" + ("/v1" if kind.startswith("openai") else "")
    return {"harness": "native", "cwd": str(tmp / "work"), "model": f"{kind}/fake-model",
            "options": {"base_url": base}, "env": {KEY_ENVS[kind]: KEY},
            "permissions": {"mode": "auto"}, **extra}


@asynccontextmanager
async def native_session(tmp: Path, kind: str, server: FakeModels,
                         **extra: Any) -> AsyncIterator[Rig]:
    """A daemon with one subscribed native session whose worker is up (``init`` seen)."""
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        async with daemon_session(tmp / "state", create_params(tmp, kind, port, **extra),
                                  timeout=TIMEOUT, ready=is_kind("init")) as rig:
            yield rig
        nursery.cancel_scope.cancel()


def mentions(request: Recorded, text: str) -> bool:
    """Whether a recorded model request carries ``text`` anywhere in its body."""
    return text in json.dumps(request.body)


def said(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in of(events, "assistant"))


@every_provider
async def test_a_turn_writes_a_file_through_write(tmp_path: Path, kind: str) -> None:
    server = FakeModels([call("write", path="hello.txt", content="hello\n"),
                         say("Wrote it.", input_tokens=30, output_tokens=7)])
    with trio.fail_after(TIMEOUT):
        async with native_session(tmp_path, kind, server) as rig:
            init = (await rig.info())
            assert init["vendor_session_id"].startswith("n-")
            events = await rig.turn("write hello.txt")
            assert (rig.work / "hello.txt").read_text() == "hello\n"
            tools = of(events, "tool")
            assert [(t["name"], t["kind"], t["phase"]) for t in tools] == [
                ("write", "edit", "started"), ("write", "edit", "completed")]
            assert tools[0]["input"] == {"path": "hello.txt", "content": "hello\n"}
            assert tools[1]["is_error"] is False and tools[0]["call_id"] == tools[1]["call_id"]
            assert said(events) == "Wrote it."
            (result,) = of(events, "result")
            assert (result["stop_reason"], result["is_error"]) == ("end_turn", False)
            assert result["usage"]["input_tokens"] == 50 and result["usage"]["output_tokens"] == 12
            assert result["cost_usd"] is None  # fake-model has no price
            requests = server.model_requests()
            assert len(requests) == 2 and mentions(requests[1], "Created hello.txt")
            # the key reached the model server, and nothing in the state dir
            assert KEY in json.dumps(requests[0].headers)
            written = [f for f in (tmp_path / "state").rglob("*") if f.is_file()
                       and KEY.encode() in f.read_bytes()]
            assert written == []


@every_provider
async def test_a_permission_denied_then_one_allowed_by_a_second_client(tmp_path: Path,
                                                                       kind: str) -> None:
    server = FakeModels([call("bash", command="echo one > one.txt"), say("Refused, fine."),
                         call("bash", command="echo two > two.txt"), say("Done.")])
    with trio.fail_after(TIMEOUT):
        async with native_session(tmp_path, kind, server, permissions={"mode": "ask"}) as rig:
            async with raw_client(rig.daemon) as other:
                other_id = other.frames[0]["connection_id"]
                await other.ok("session.subscribe", session_id=rig.sid)
                for text, decision in (("one", "deny"), ("two", "allow")):
                    assert await rig.prompt(text) == "prompted"
                    ask = (await rig.until(is_kind("permission"), other))[-1]
                    assert (ask["tool"], ask["kind"]) == ("bash", "exec")
                    assert ask["input"] == {"command": f"echo {text} > {text}.txt"}
                    assert (await rig.info())["state"] == "waiting"
                    await other.ok("session.permission", session_id=rig.sid,
                                   permission_id=ask["permission_id"], decision=decision)
                    events = await rig.until(is_kind("result"))
                    assert of(events, "permission_decided") == [
                        {"type": "permission_decided", "permission_id": ask["permission_id"],
                         "decision": decision, "by": other_id, "by_name": "e2e"}]
                    (done,) = [t for t in of(events, "tool") if t["phase"] == "completed"]
                    assert done["is_error"] is (decision == "deny")
                    assert of(events, "result")[0]["stop_reason"] == "end_turn"
    assert not (tmp_path / "work" / "one.txt").exists()
    assert (tmp_path / "work" / "two.txt").read_text() == "two\n"
    assert mentions(server.model_requests()[1], "The user refused")


@every_provider
async def test_an_interrupt_during_a_slow_stream_closes_it(tmp_path: Path, kind: str) -> None:
    server = FakeModels([hang("Thinking slowly"), say("After the interrupt.")])
    with trio.fail_after(TIMEOUT):
        async with native_session(tmp_path, kind, server) as rig:
            assert await rig.prompt("go slowly") == "prompted"
            await rig.until(is_kind("assistant"))
            await server.wait_for(lambda: server.hanging == 1)
            asked = trio.current_time()
            await rig.client.ok("session.interrupt", session_id=rig.sid)
            (result,) = of(await rig.until(is_kind("result")), "result")
            assert (result["stop_reason"], result["is_error"]) == ("interrupted", False)
            await server.wait_for(lambda: server.hang_closed == 1)
            assert trio.current_time() - asked < 1.0  # the HTTP stream was closed at once
            events = await rig.turn("still there?")
            assert said(events) == "After the interrupt."


@every_provider
async def test_a_steer_reaches_the_next_model_request(tmp_path: Path, kind: str) -> None:
    server = FakeModels([Turn(text="Listing", calls=[Call(name="ls")], hang=True),
                         say("With pears.")])
    with trio.fail_after(TIMEOUT):
        async with native_session(tmp_path, kind, server) as rig:
            assert await rig.prompt("list the files") == "prompted"
            await rig.until(is_kind("assistant"))
            await server.wait_for(lambda: server.hanging == 1)
            assert await rig.prompt("mention pears") == "steered"
            server.release()
            events = await rig.until(is_kind("result"))
            assert of(events, "user") == [
                {"type": "user", "text": "mention pears", "delivery": "steered"}]
            assert of(events, "result")[0]["stop_reason"] == "end_turn"
            assert said(events).endswith("With pears.")
    first, second = server.model_requests()
    assert not mentions(first, "mention pears") and mentions(second, "mention pears")


@every_provider
async def test_three_turns_on_one_worker(tmp_path: Path, kind: str) -> None:
    server = FakeModels([say("One."), say("Two."), say("Three.")])
    with trio.fail_after(TIMEOUT):
        async with native_session(tmp_path, kind, server) as rig:
            pid = await rig.pid()
            for text, answer in (("one", "One."), ("two", "Two."), ("three", "Three.")):
                events = await rig.turn(text)
                assert said(events) == answer
                assert of(events, "result")[0]["stop_reason"] == "end_turn"
                assert await rig.pid() == pid
            info = await rig.info()
            assert (info["restarts"], info["state"]) == (0, "idle")
    requests = server.model_requests()
    assert len(requests) == 3
    assert all(mentions(requests[2], text) for text in ("one", "One.", "two", "Two.", "three"))


@every_provider
async def test_sigkill_of_the_worker_restarts_it_and_the_conversation_goes_on(
        tmp_path: Path, kind: str) -> None:
    server = FakeModels([say("Noted: apricot."), say("Apricot.")])
    with trio.fail_after(TIMEOUT):
        async with native_session(tmp_path, kind, server) as rig:
            native_id = (await rig.info())["vendor_session_id"]
            await rig.turn("remember apricot")
            old = await rig.pid()
            before = family(old)
            os.kill(old, signal.SIGKILL)
            events = await rig.until(is_kind("init"))
            kinds = [e["type"] for e in events]
            (exit_event,) = of(events, "exit")
            assert (exit_event["reason"], exit_event["signal"]) == ("crashed", "SIGKILL")
            assert kinds.index("exit") < kinds.index("restarted") < kinds.index("init")
            (init,) = of(events, "init")
            assert init["vendor_session_id"] == native_id
            assert init["model"] == f"{kind}/fake-model" and init["cwd"] == str(rig.work)
            assert init["tools"] == ["read", "write", "edit", "bash", "grep", "find", "ls", "diagnostics"]
            assert wait_gone(before) == []
            events = await rig.turn("which word?")
            assert said(events) == "Apricot."
            info = await rig.info()
            assert info["restarts"] == 1 and info["pid"] not in (None, old)
    resumed = server.model_requests()[1]
    assert mentions(resumed, "remember apricot") and mentions(resumed, "Noted: apricot.")


@every_provider
async def test_close_mid_turn_leaves_no_process(tmp_path: Path, kind: str) -> None:
    # A job left running in the background (its output redirected, so the call returns), then
    # a model request held open: close mid-turn.
    server = FakeModels([call("bash", command="sleep 300 > /dev/null 2>&1 & echo started"),
                         hang("Waiting")])
    state = tmp_path / "state"
    with trio.fail_after(TIMEOUT):
        async with native_session(tmp_path, kind, server) as rig:
            assert await rig.prompt("sleep in the background") == "prompted"
            await server.wait_for(lambda: server.hanging == 1)
            pid = await rig.pid()
            before = family(pid)
            assert any("sleep 300" in cmdline(p) for p in before)  # adopted by the worker
            assert pid in marked(state)
            assert "actors.native" in cmdline(pid)
            await close_and_check_gone(rig, state, before)


@pytest.mark.parametrize("sandboxed", [False, True])
async def test_options_resume_continues_a_native_session_in_a_new_corral_session(
        tmp_path: Path, sandboxed: bool) -> None:
    """Sandboxed too: the earlier session's store is copied in before the worker confines
    itself (after, the state directory is out of its sight)."""
    if sandboxed and landlock.abi() < 1:
        pytest.skip("needs Landlock")
    server = FakeModels([say("Noted: apricot."), say("Apricot.")])
    with trio.fail_after(TIMEOUT):
        async with native_session(tmp_path, "openai", server) as rig:
            native_id = (await rig.info())["vendor_session_id"]
            await rig.turn("remember apricot")
            await rig.client.ok("session.close", session_id=rig.sid)
            params = create_params(tmp_path, "openai", server.port,
                                   options={"base_url": f"http://127.0.0.1:{server.port}/v1",
                                            "resume": native_id,
                                            **({"sandbox": {"mode": "landlock", "net": "on"}} if sandboxed else {})})
            created = await rig.client.ok("session.create", **params)
            sid = created["session"]["id"]
            await rig.client.ok("session.subscribe", session_id=sid)
            again = Rig(rig.daemon, rig.client, sid, rig.work, TIMEOUT)
            (init,) = of(await again.until(is_kind("init")), "init")
            assert init["vendor_session_id"] == native_id
            assert (init.get("sandbox") or {}).get("effective") == ("landlock" if sandboxed else None)
            events = await again.turn("which word?")
            assert said(events) == "Apricot."
            stored = tmp_path / "state" / "sessions" / sid / "native" / f"{native_id}.jsonl"
            assert stored.exists()
    resumed = server.model_requests()[1]
    assert mentions(resumed, "remember apricot") and mentions(resumed, "Noted: apricot.")
