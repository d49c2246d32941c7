"""The real Claude Code CLI through a real daemon, offline: every scenario a client relies on.

A daemon process runs ``claude`` sessions (stream-json mode) pointed at the fake Anthropic
server of this test process (``tests.fakes.anthropic_server`` on 127.0.0.1) with a dummy key,
an isolated config home and the switches that stop Claude's other traffic; a raw protocol client
checks the normalized events every subscriber sees. Covered: a Bash call that creates a file
(allowed by the session's policy), permissions answered allow and deny by a second client, an
interrupt during a reply that hangs, a prompt steered into a running turn, a prompt held during
the handshake and three turns on one process, SIGKILL of the Claude child followed by a restart
that resumes the conversation (the next model request carries the earlier turns), a restart
whose resume target Claude never wrote (it starts a new conversation instead of crash-looping),
and a graceful close mid-turn that leaves no process behind (a background shell included).
Every test also checks, after the daemon stopped, that no process carries its marker.

Skipped when Claude Code is not installed, unless ``CI`` is set (then a missing CLI fails).
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.vendors.claude.translate import DENY_MESSAGE
from tests.fakes.anthropic_server import FakeAnthropic, RecordedRequest, Reply, Scripted, Text, ToolUse, bash, text
from tests.fakes.claude_offline import INSTALL_HINT, OFFLINE_ENV, claude_binary

from .daemonproc import raw_client, wait_gone
from .vendor_rig import Frame, Rig, close_and_check_gone, cmdline, daemon_session, family, is_kind, of, unmarked

BINARY = claude_binary()
pytestmark = [pytest.mark.vendor, pytest.mark.skipif(
    BINARY is None and not os.environ.get("CI"), reason=f"Claude Code is not installed ({INSTALL_HINT})")]

TIMEOUT = 90
"""Seconds of real time per test (a test takes a few); below pytest's own timeout of 120."""

IDLE = is_kind("status", state="idle")


def _binary() -> str:
    if BINARY is None:
        pytest.fail(f"CI is set but Claude Code is not installed ({INSTALL_HINT})")
    return BINARY


def create_params(tmp: Path, port: int, **extra: Any) -> dict[str, Any]:
    """``session.create`` params for an offline Claude session in ``tmp/work``."""
    for name in ("work", "home"):
        (tmp / name).mkdir(exist_ok=True)
    permissions = {"mode": "ask", **extra.pop("permissions", {})}
    options = {"binary": _binary(), "home": str(tmp / "home" / ".claude"), **extra.pop("options", {})}
    env = {**OFFLINE_ENV, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": "test-key",
           "HOME": str(tmp / "home")}
    return {"harness": "claude", "cwd": str(tmp / "work"), "options": options, "env": env,
            "permissions": permissions, **extra}


@asynccontextmanager
async def claude_session(tmp: Path, *script: Scripted, ready: bool = True,
                         **extra: Any) -> AsyncIterator[tuple[Rig, FakeAnthropic]]:
    """The fake server with ``script``, a daemon, and one subscribed Claude session.

    With ``ready`` the session has finished Claude's handshake (``status idle``) on entry.
    """
    server = FakeAnthropic(script)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        async with daemon_session(tmp / "state", create_params(tmp, port, **extra), timeout=TIMEOUT,
                                  ready=IDLE if ready else None) as rig:
            yield rig, server
        nursery.cancel_scope.cancel()


def texts(request: RecordedRequest, role: str | None = "user") -> list[str]:
    """Every text of ``role``'s messages (``None``: every message) in a recorded model request, in order."""
    found: list[str] = []
    for message in request.body["messages"]:
        if role is not None and message["role"] != role:
            continue
        content = message["content"]
        if isinstance(content, str):
            found.append(content)
            continue
        found += [block["text"] for block in content if block.get("type") == "text"]
    return found


def mentions(request: RecordedRequest, *wanted: str, role: str | None = "user") -> list[str]:
    """Which of ``wanted`` occur in ``role``'s texts of ``request``, in the order they occur."""
    return [w for t in texts(request, role) for w in wanted if w in t]


async def flushed(tmp: Path, vendor_session_id: str, text: str) -> None:
    """Wait until Claude's transcript of the conversation holds ``text``.

    Claude writes its transcript (what ``--resume`` reads) some 50 ms after the fact; a child
    killed before that comes back without it.
    """
    pattern = f"projects/*/{vendor_session_id}.jsonl"
    while not any(text in path.read_text() for path in (tmp / "home" / ".claude").glob(pattern)):
        await trio.sleep(0.02)


def said(events: list[Frame]) -> str:
    """The assistant text of these events (the deltas, plus any text that was not streamed)."""
    return "".join(e["text"] for e in of(events, "assistant"))


async def test_a_bash_call_creates_the_file(tmp_path: Path) -> None:
    script = [bash("echo made-by-claude > made.txt && echo created"), text("Created made.txt.")]
    with trio.fail_after(TIMEOUT):
        async with claude_session(tmp_path, *script, permissions={"allow_tools": ["Bash"]}) as (rig, server):
            events = await rig.turn("create made.txt")
            assert (rig.work / "made.txt").read_text() == "made-by-claude\n"
            assert of(events, "user") == [{"type": "user", "text": "create made.txt", "delivery": "prompted"}]
            (init,) = of(events, "init")
            assert init["cwd"] == str(rig.work) and "Bash" in init["tools"] and init["vendor_session_id"]
            tools = of(events, "tool")
            assert [(t["name"], t["kind"], t["phase"]) for t in tools] == [
                ("Bash", "exec", "started"), ("Bash", "exec", "completed")]
            assert tools[0]["call_id"] == tools[1]["call_id"]
            assert tools[0]["input"]["command"] == "echo made-by-claude > made.txt && echo created"
            assert (tools[1]["output"], tools[1]["is_error"]) == ("created", False)
            # allow_tools reach the CLI as --allowedTools: it runs Bash without asking at all.
            assert of(events, "permission") == [] and of(events, "permission_decided") == []
            assert said(events) == "Created made.txt."
            (result,) = of(events, "result")
            assert (result["stop_reason"], result["is_error"]) == ("end_turn", False)
            assert result["usage"]["input_tokens"] == 50  # two model calls of 25
            assert result["cost_usd"] > 0 and result["duration_ms"] >= 0
            assert await rig.until(is_kind("status")) == [{"type": "status", "state": "idle", "stalled": False}]
            info = await rig.info()
            assert info["vendor_session_id"] == init["vendor_session_id"]
    second = server.message_requests[1].body["messages"][-1]["content"]
    assert any(b.get("type") == "tool_result" and "created" in str(b.get("content")) for b in second)


async def test_permissions_are_answered_by_a_second_client(tmp_path: Path) -> None:
    script = [bash("echo allowed > made.txt"), text("Created it."),
              bash("rm made.txt"), text("Left it alone.")]
    with trio.fail_after(TIMEOUT):
        async with claude_session(tmp_path, *script) as (rig, server):
            async with raw_client(rig.daemon) as other:
                other_id = other.frames[0]["connection_id"]
                await other.ok("session.subscribe", session_id=rig.sid)
                asked: list[str] = []
                for prompt, decision in (("create made.txt", "allow"), ("remove made.txt", "deny")):
                    assert await rig.prompt(prompt) == "prompted"
                    ask = (await rig.until(is_kind("permission")))[-1]
                    assert (await rig.until(is_kind("permission"), other))[-1] == ask
                    assert (ask["tool"], ask["kind"]) == ("Bash", "exec")
                    assert ask["options"] == ["allow", "deny", "allow_always"]
                    asked.append(ask["permission_id"])
                    assert (await rig.info())["state"] == "waiting"
                    await other.ok("session.permission", session_id=rig.sid,
                                   permission_id=ask["permission_id"], decision=decision)
                    decided = {"type": "permission_decided", "permission_id": ask["permission_id"],
                               "decision": decision, "by": other_id, "by_name": "e2e"}
                    for client in (rig.client, other):
                        assert (await rig.until(is_kind("permission_decided"), client))[-1] == decided
                    events = await rig.until(is_kind("result"))
                    (done,) = of(events, "tool")
                    assert done["phase"] == "completed" and done["is_error"] is (decision == "deny")
                    (result,) = of(events, "result")
                    assert (result["stop_reason"], result["is_error"]) == ("end_turn", False)
                    again = await other.call("session.permission", session_id=rig.sid,
                                             permission_id=ask["permission_id"], decision="allow")
                    assert again["code"] == "already_decided"
                    if decision == "allow":
                        assert (rig.work / "made.txt").read_text() == "allowed\n"
                        assert said(events) == "Created it."
                    else:
                        assert done["output"] == DENY_MESSAGE
                        assert said(events) == "Left it alone."
                assert len(set(asked)) == 2
    assert (tmp_path / "work" / "made.txt").exists()  # the denied rm never ran
    denied = server.message_requests[3].body["messages"][-1]["content"][0]
    assert (denied["type"], denied["is_error"], denied["content"]) == ("tool_result", True, DENY_MESSAGE)


async def test_interrupt_during_a_hanging_reply(tmp_path: Path) -> None:
    hang = Reply(blocks=[Text(text="this never ends")], hang=True)
    with trio.fail_after(TIMEOUT):
        async with claude_session(tmp_path, hang, text("After.")) as (rig, server):
            assert await rig.prompt("go on forever") == "prompted"
            await rig.until(is_kind("assistant"))
            assert (await rig.info())["state"] == "running"
            await rig.client.ok("session.interrupt", session_id=rig.sid)
            (result,) = of(await rig.until(is_kind("result")), "result")
            assert (result["stop_reason"], result["is_error"]) == ("interrupted", False)
            events = await rig.turn("and now?")
            assert said(events) == "After."
            assert of(events, "result")[0]["stop_reason"] == "end_turn"
            assert mentions(server.message_requests[1], "go on forever", "and now?") == [
                "go on forever", "and now?"]


async def test_a_steered_prompt_reaches_the_next_model_request(tmp_path: Path) -> None:
    # The turn waits on a permission while the second prompt arrives: it is steered into the
    # running turn deterministically, and Claude carries it in the request after the tool (as a
    # message of its own: "The user sent a new message while you were working: ...").
    script = [bash("touch through.txt"), text("With pears.")]
    with trio.fail_after(TIMEOUT):
        async with claude_session(tmp_path, *script) as (rig, server):
            assert await rig.prompt("run the command") == "prompted"
            ask = (await rig.until(is_kind("permission")))[-1]
            assert await rig.prompt("and mention pears") == "steered"
            await rig.client.ok("session.permission", session_id=rig.sid,
                                permission_id=ask["permission_id"], decision="allow")
            events = await rig.until(is_kind("result"))
            assert of(events, "user") == [{"type": "user", "text": "and mention pears", "delivery": "steered"}]
            assert said(events) == "With pears."
            (result,) = of(events, "result")
            assert (result["stop_reason"], result["is_error"]) == ("end_turn", False)
            assert result["usage"]["input_tokens"] == 50  # one turn of two model calls
            assert (rig.work / "through.txt").exists()
    requests = server.message_requests
    assert len(requests) == 2
    assert mentions(requests[0], "and mention pears", role=None) == []
    assert mentions(requests[1], "run the command", "and mention pears", role=None) == [
        "run the command", "and mention pears"]


async def test_a_held_prompt_and_three_turns_on_one_process(tmp_path: Path) -> None:
    script = [text("One."), text("Two."), text("Three.")]
    with trio.fail_after(TIMEOUT):
        # The create prompt arrives while Claude is still starting (before its handshake answer):
        # it is held, then delivered as the first turn.
        async with claude_session(tmp_path, *script, ready=False, prompt="one") as (rig, server):
            events = await rig.until(is_kind("result"))
            assert of(events, "user") == [{"type": "user", "text": "one", "delivery": "held"}]
            assert said(events) == "One."
            kinds = [e["type"] for e in events]
            assert kinds.index("user") > kinds.index("status")
            pid = await rig.pid()
            for prompt, answer in (("two", "Two."), ("three", "Three.")):
                events = await rig.turn(prompt)
                assert of(events, "user") == [{"type": "user", "text": prompt, "delivery": "prompted"}]
                assert said(events) == answer
                assert of(events, "result")[0]["stop_reason"] == "end_turn"
                assert await rig.pid() == pid
            info = await rig.info()
            assert (info["restarts"], info["state"]) == (0, "idle")
    requests = server.message_requests
    assert len(requests) == 3
    assert mentions(requests[2], "one", "two", "three") == ["one", "two", "three"]
    assert mentions(requests[2], "One.", "Two.", role="assistant") == ["One.", "Two."]


async def test_sigkill_of_claude_restarts_it_and_resumes_the_conversation(tmp_path: Path) -> None:
    script = [text("Noted: apricot."), text("Apricot.")]
    with trio.fail_after(TIMEOUT):
        async with claude_session(tmp_path, *script) as (rig, server):
            first = await rig.turn("remember apricot")
            (init,) = of(first, "init")
            await flushed(tmp_path, init["vendor_session_id"], "Noted: apricot.")
            old = await rig.pid()
            old_family = family(old)
            os.kill(old, signal.SIGKILL)
            events = await rig.until(is_kind("restarted"))
            events += await rig.until(IDLE)  # the new child answered the handshake
            kinds = [e["type"] for e in events]
            (exit_event,) = of(events, "exit")
            assert (exit_event["reason"], exit_event["signal"], exit_event["exit_code"]) == (
                "crashed", "SIGKILL", None)
            assert of(events, "restarted")[0]["attempt"] == 1
            assert kinds.index("exit") < kinds.index("restarted")
            assert wait_gone(old_family) == []
            new = await rig.pid()
            assert new != old and f"--resume={init['vendor_session_id']}" in cmdline(new)

            events = await rig.turn("which word?")
            assert said(events) == "Apricot."
            assert of(events, "result")[0]["stop_reason"] == "end_turn"
            (again,) = of(events, "init")
            assert again["vendor_session_id"] == init["vendor_session_id"]  # the same conversation
            info = await rig.info()
            assert (info["restarts"], info["pid"], info["state"]) == (1, new, "idle")
    resumed = server.message_requests[1]
    assert mentions(resumed, "remember apricot", "which word?") == ["remember apricot", "which word?"]
    assert mentions(resumed, "Noted: apricot.", role="assistant") == ["Noted: apricot."]


async def test_a_conversation_claude_does_not_have_is_started_afresh(tmp_path: Path) -> None:
    # What a child killed before Claude wrote its transcript comes back to: --resume of an id
    # Claude does not know. Claude says so and exits; the restart starts a new conversation.
    missing = str(uuid.uuid4())
    with trio.fail_after(TIMEOUT):
        async with claude_session(tmp_path, text("Fresh."), ready=False, options={"resume": missing}) as (rig, server):
            events = await rig.until(IDLE)
            (error,) = of(events, "error")
            assert (error["class"], error["code"]) == ("unknown", "claude.unknown.session_not_found")
            assert missing in error["message"]
            (exit_event,) = of(events, "exit")
            assert (exit_event["reason"], exit_event["exit_code"]) == ("crashed", 1)
            assert of(events, "restarted")[0]["attempt"] == 1
            assert of(events, "result") == []  # no turn ran
            events = await rig.turn("hello")
            assert said(events) == "Fresh."
            (init,) = of(events, "init")
            assert init["vendor_session_id"] not in (None, missing)
            info = await rig.info()
            assert (info["restarts"], info["state"], info["vendor_session_id"]) == (
                1, "idle", init["vendor_session_id"])
            assert "--resume" not in cmdline(await rig.pid())
    (request,) = server.message_requests
    assert mentions(request, "hello") == ["hello"]


async def test_close_mid_turn_leaves_no_process(tmp_path: Path) -> None:
    # A shell left running in the background, then a model request that hangs: close mid-turn.
    background = Reply(blocks=[ToolUse(name="Bash", input={
        "command": "sleep 300", "description": "sleep", "run_in_background": True})])
    hang = Reply(blocks=[Text(text="Waiting")], hang=True)
    state = tmp_path / "state"
    with trio.fail_after(TIMEOUT):
        async with claude_session(tmp_path, background, hang, permissions={"allow_tools": ["Bash"]}) as (rig, server):
            assert await rig.prompt("sleep in the background") == "prompted"
            await rig.until(is_kind("assistant"))
            await server.wait_for_requests(2)
            pid = await rig.pid()
            everyone = family(pid)
            assert any("sleep 300" in cmdline(p) for p in everyone), [cmdline(p) for p in everyone]
            assert unmarked(state, everyone) == []
            await close_and_check_gone(rig, state, everyone)
