"""The real OpenCode server (``opencode serve``) through a real daemon, offline.

OpenCode sessions have no process of their own: they attach to a shared server started by the
daemon's ``opencode`` supervisor, through the driver's ``spawn`` hook, which the session runs
from ``actors.session.child`` (the driver, server actor and translator are also covered without
a daemon in ``tests/actors/vendors/opencode``).

Covered: a bash tool call whose file appears; permissions denied then allowed from a second
client; an interrupt during a slow turn; a held prompt and three turns on one attachment; two
sessions on one server (one pid, listed once in ``daemon.status`` as ``opencode-server``);
SIGKILL of the server → both sessions see ``exit crashed`` → ``restarted`` and resume their
conversations; a close that leaves no process (the last close stops the server).
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
from tests.fakes.opencode_offline import (
    INSTALL_HINT, MODEL, offline_env, opencode_binary, provider_config, title_aside,
)

from .daemonproc import raw_client, wait_gone
from .vendor_rig import Rig, daemon_session, is_kind, marked_gone, of

BINARY = opencode_binary()
pytestmark = [
    pytest.mark.vendor,
    pytest.mark.skipif(BINARY is None and not os.environ.get("CI"),
                       reason=f"opencode is not installed ({INSTALL_HINT})"),
]

TIMEOUT = 150


def create_params(tmp: Path, port: int, **extra: Any) -> dict[str, Any]:
    (tmp / "work").mkdir(exist_ok=True)
    if BINARY is None:
        pytest.fail(f"CI is set but opencode is not installed ({INSTALL_HINT})")
    return {"harness": "opencode", "cwd": str(tmp / "work"), "model": MODEL,
            "options": {"binary": BINARY, "config": provider_config(port)},
            "env": offline_env(tmp), "permissions": {"mode": "auto"}, **extra}


@asynccontextmanager
async def opencode_session(tmp: Path, server: FakeModels, **extra: Any) -> AsyncIterator[Rig]:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        async with daemon_session(tmp / "state", create_params(tmp, port, **extra),
                                  timeout=TIMEOUT, ready=is_kind("init")) as rig:
            rig.port = port  # type: ignore[attr-defined]
            yield rig
        nursery.cancel_scope.cancel()


def said(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in of(events, "assistant"))


def user_texts(request: Recorded) -> list[str]:
    return [m["content"] if isinstance(m["content"], str) else
            "".join(p.get("text", "") for p in m["content"] if p.get("type") == "text")
            for m in request.body["messages"] if m["role"] == "user"]


async def servers_listed(rig: Rig) -> list[dict[str, Any]]:
    status = await rig.client.ok("daemon.status")
    return [c for c in status["children"] if c["kind"] == "opencode-server"]


async def test_a_bash_tool_call_creates_the_file(tmp_path: Path) -> None:
    fake = FakeModels([call("bash", command="printf made > made.txt && echo created",
                            description="make it"), say("Created it.")], aside=title_aside)
    with trio.fail_after(TIMEOUT):
        async with opencode_session(tmp_path, fake) as rig:
            events = await rig.turn("create made.txt")
            assert (rig.work / "made.txt").read_text() == "made"
            tools = of(events, "tool")
            assert (tools[0]["name"], tools[0]["kind"], tools[0]["phase"]) == ("bash", "exec", "started")
            assert (tools[-1]["phase"], tools[-1]["output"]) == ("completed", "created\n")
            assert said(events) == "Created it."
            assert of(events, "result")[0]["stop_reason"] == "end_turn"
            (listed,) = await servers_listed(rig)
            assert listed["pid"] == await rig.pid()


async def test_permission_denied_then_allowed_from_a_second_client(tmp_path: Path) -> None:
    fake = FakeModels([call("bash", command="touch denied.txt", description="no"),
                       call("write", filePath="allowed.txt", content="yes"), say("Done.")],
                      aside=title_aside)
    with trio.fail_after(TIMEOUT):
        async with opencode_session(tmp_path, fake, permissions={"mode": "ask"}) as rig:
            async with raw_client(rig.daemon) as other:
                other_id = other.frames[0]["connection_id"]
                await other.ok("session.subscribe", session_id=rig.sid)
                for text, decision, kind in (("touch denied.txt", "deny", "exec"),
                                             ("write allowed.txt", "allow", "edit")):
                    assert await rig.prompt(text) == "prompted"
                    ask = (await rig.until(is_kind("permission")))[-1]
                    assert (await rig.until(is_kind("permission"), other))[-1] == ask
                    assert ask["kind"] == kind and (await rig.info())["state"] == "waiting"
                    await other.ok("session.permission", session_id=rig.sid,
                                   permission_id=ask["permission_id"], decision=decision)
                    seen = (await rig.until(is_kind("permission_decided")))[-1]
                    assert (seen["decision"], seen["by"]) == (decision, other_id)
                    await rig.until(is_kind("result"))
    assert not (tmp_path / "work" / "denied.txt").exists()
    assert (tmp_path / "work" / "allowed.txt").read_text() == "yes"


async def test_interrupt_during_a_slow_turn(tmp_path: Path) -> None:
    fake = FakeModels([hang("Thinking"), say("After the interrupt.")], aside=title_aside)
    with trio.fail_after(TIMEOUT):
        async with opencode_session(tmp_path, fake) as rig:
            assert await rig.prompt("go slowly") == "prompted"
            await fake.wait_for(lambda: fake.hanging == 1)
            await rig.client.ok("session.interrupt", session_id=rig.sid)
            (result,) = of(await rig.until(is_kind("result")), "result")
            assert (result["stop_reason"], result["is_error"]) == ("interrupted", False)
            events = await rig.turn("still there?")
            assert said(events) == "After the interrupt."


async def test_a_held_prompt_and_three_turns_on_one_server(tmp_path: Path) -> None:
    fake = FakeModels([say("One."), say("Two."), say("Three.")], aside=title_aside)
    with trio.fail_after(TIMEOUT):
        async with opencode_session(tmp_path, fake, prompt="one") as rig:
            events = await rig.until(is_kind("result"))
            assert of(events, "user") == [{"type": "user", "text": "one", "delivery": "held"}]
            pid = await rig.pid()
            for text in ("two", "three"):
                assert of(await rig.turn(text), "result")[0]["stop_reason"] == "end_turn"
                assert await rig.pid() == pid
    assert user_texts(fake.model_requests()[2]) == ["one", "two", "three"]


async def test_two_sessions_share_a_server_and_both_resume_after_its_sigkill(tmp_path: Path) -> None:
    fake = FakeModels([say("Noted: apricot."), say("Noted: banana."), say("Apricot."),
                       say("Banana.")], aside=title_aside)
    state = tmp_path / "state"
    with trio.fail_after(TIMEOUT):
        async with opencode_session(tmp_path, fake) as rig:
            params = create_params(tmp_path, rig.port)  # type: ignore[attr-defined]
            async with raw_client(rig.daemon) as client:  # one client per session: each reads its own
                await two_sessions(rig, client, params)
    assert marked_gone(state) == []
    later = fake.model_requests()[2:]
    assert [user_texts(r) for r in later] == [["remember apricot", "first word?"],
                                             ["remember banana", "second word?"]]


async def two_sessions(rig: Rig, client: Any, params: dict[str, Any]) -> None:
    """A second session on ``rig``'s server; SIGKILL of the server; both resume; both close."""
    other = (await client.ok("session.create", **params))["session"]["id"]
    await client.ok("session.subscribe", session_id=other)
    second = Rig(rig.daemon, client, other, rig.work, rig.timeout)
    await second.until(is_kind("init"))
    assert await rig.pid() == await second.pid()
    (listed,) = await servers_listed(rig)
    for session, word in ((rig, "apricot"), (second, "banana")):
        await session.turn(f"remember {word}")
    old = listed["pid"]
    os.kill(old, signal.SIGKILL)
    for session in (rig, second):
        events = await session.until(is_kind("init"))
        (exit_event,) = of(events, "exit")
        assert (exit_event["reason"], exit_event["signal"]) == ("crashed", "SIGKILL")
        assert of(events, "restarted")
    assert wait_gone([old]) == []
    new = await rig.pid()
    assert new == await second.pid() != old
    assert [c["pid"] for c in await servers_listed(rig)] == [new]
    assert said(await rig.turn("first word?")) == "Apricot."
    assert said(await second.turn("second word?")) == "Banana."
    await rig.client.ok("session.close", session_id=rig.sid)
    assert [c["pid"] for c in await servers_listed(rig)] == [new]  # the other still uses it
    await rig.client.ok("session.close", session_id=other)
    assert wait_gone([new]) == []  # the last close stopped it, with the daemon still running
