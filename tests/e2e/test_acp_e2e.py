"""Real ACP agents (Gemini CLI, Copilot CLI, claude-code-acp, ``opencode acp``, codex-acp)
through a real daemon, offline.

Each test runs for every pinned agent: a daemon process (``vendor_rig.daemon_session``) runs the
agent with its model pointed at the fake model server of this test process
(``tests.fakes.model_server`` on 127.0.0.1: Gemini's ``streamGenerateContent``, Chat
Completions for Copilot and OpenCode, Anthropic Messages for claude-code-acp, Responses for
codex-acp). Covered: a tool turn whose file appears, a permission denied then allowed from a
second client, an interrupt during a slow turn, three turns on one process, SIGKILL of the agent
followed by a restart that resumes the conversation (for Gemini after the next wall-clock
minute, see the ``load_next_minute`` quirk), and a close that leaves no process. Skipped per agent when it is not installed, unless ``CI`` is
set (then a missing agent fails).
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

from tests.fakes.acp_offline import AGENTS, MODELS, PINNED, aside, binary, install_hint, offline
from tests.fakes.model_script import Turn, call, custom, hang, say
from tests.fakes.model_server import FakeModels, Recorded

from .daemonproc import DaemonProc, raw_client, wait_gone
from .vendor_rig import Rig, close_and_check_gone, daemon_session, family, is_kind, marked, of

pytestmark = [pytest.mark.vendor]

TIMEOUT = 100
RESTART_TIMEOUT = 200  # a Gemini restart waits for the next wall-clock minute


def _write(agent: str, work: Path, name: str, text: str) -> Turn:
    """The agent's file-writing tool call. The session serves ``fs/*`` and ``terminal/*``, so
    Gemini writes through it and claude-code-acp offers its client-backed ``mcp__acp__`` tools
    instead of the built-in ones; Copilot uses neither."""
    path = str(work / name)
    if agent == "gemini":
        return call("write_file", file_path=path, content=text)
    if agent == "copilot":
        return call("create", path=path, file_text=text)
    if agent == "codex-acp":
        lines = "".join(f"+{line}\n" for line in text.splitlines())
        return custom("apply_patch", f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch")
    if agent == "opencode-acp":
        return call("write", filePath=path, content=text)
    return call("mcp__acp__Write", file_path=path, content=text)


def _shell(agent: str, command: str) -> Turn:
    if agent == "gemini":
        return call("run_shell_command", command=command)
    if agent in ("copilot", "opencode-acp"):
        return call("bash", command=command, description="run it")
    if agent == "codex-acp":
        return call("exec_command", cmd=command)
    return call("mcp__acp__Bash", command=command, description="run it", timeout=10000)


def _agent(agent: str) -> str:
    found = binary(agent)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {agent} is not installed ({install_hint(agent)})")
        pytest.skip(f"{agent} is not installed ({install_hint(agent)})")
    return found


@asynccontextmanager
async def acp_session(tmp: Path, agent: str, server: FakeModels, *,
                      options_extra: dict[str, Any] | None = None,
                      **extra: Any) -> AsyncIterator[Rig]:
    """A daemon with one subscribed session of ``agent`` whose ACP session is open;
    ``options_extra`` joins the session's options, ``extra`` replaces create parameters."""
    path = _agent(agent)
    (tmp / "work").mkdir(exist_ok=True)
    server.aside = aside(agent)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        env, options = offline(agent, port, tmp / "home")
        params: dict[str, Any] = {
            "harness": agent, "cwd": str(tmp / "work"), "env": env,
            "options": {**options, "binary": path, **(options_extra or {})},
            "permissions": {"mode": "auto_edit"}}
        if MODELS[agent]:
            params["model"] = MODELS[agent]
        params.update(extra)
        async with daemon_session(tmp / "state", params, timeout=RESTART_TIMEOUT,
                                  ready=is_kind("init")) as rig:
            await rig.until(is_kind("status", state="idle"))
            yield rig
        nursery.cancel_scope.cancel()


def said(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in of(events, "assistant"))


def carries(request: Recorded, text: str) -> bool:
    return text in json.dumps(request.body)


@pytest.mark.parametrize("agent", AGENTS)
async def test_a_tool_turn_writes_the_file(tmp_path: Path, agent: str) -> None:
    work = tmp_path / "work"
    server = FakeModels([_write(agent, work, "hello.txt", "hi there\n"), say("Wrote it.")])
    with trio.fail_after(TIMEOUT):
        async with acp_session(tmp_path, agent, server) as rig:
            events = await rig.turn("write hello.txt")
            assert (work / "hello.txt").read_text() == "hi there\n"
            tools = [t for t in of(events, "tool") if t["kind"] == "edit"]
            assert [t["phase"] for t in tools][0] == "started"
            assert tools[-1]["phase"] == "completed" and not tools[-1]["is_error"]
            assert said(events).endswith("Wrote it.")  # Copilot says "Info: <path>" first
            (result,) = of(events, "result")
            assert (result["stop_reason"], result["is_error"]) == ("end_turn", False)
            assert carries(server.model_requests()[1], "hello.txt")


@pytest.mark.parametrize("agent", AGENTS)
async def test_a_permission_denied_then_allowed_by_a_second_client(tmp_path: Path,
                                                                   agent: str) -> None:
    server = FakeModels()
    with trio.fail_after(TIMEOUT):
        async with acp_session(tmp_path, agent, server, permissions={"mode": "ask"}) as rig:
            async with raw_client(rig.daemon) as other:
                other_id = other.frames[0]["connection_id"]
                await other.ok("session.subscribe", session_id=rig.sid)
                for name, decision in (("denied.txt", "deny"), ("allowed.txt", "allow")):
                    # After a refusal some agents end the turn, others ask the model again.
                    server.steps.clear()
                    server.add(_shell(agent, f"touch {name}"), say("Over."))
                    assert await rig.prompt(f"{decision} it") == "prompted"
                    ask = (await rig.until(is_kind("permission")))[-1]
                    assert (await rig.until(is_kind("permission"), other))[-1] == ask
                    assert ask["kind"] == "exec"
                    assert "touch" in json.dumps(ask["input"])
                    assert set(ask["options"]) >= {"allow", "deny"}
                    assert (await rig.info())["state"] == "waiting"
                    await other.ok("session.permission", session_id=rig.sid,
                                   permission_id=ask["permission_id"], decision=decision)
                    decided = (await rig.until(is_kind("permission_decided")))[-1]
                    assert (decided["decision"], decided["by"]) == (decision, other_id)
                    events = await rig.until(is_kind("result"))
                    assert of(events, "result")[-1]["stop_reason"] == "end_turn"
    assert not (tmp_path / "work" / "denied.txt").exists()
    assert (tmp_path / "work" / "allowed.txt").exists()


@pytest.mark.parametrize("agent", AGENTS)
async def test_an_interrupt_during_a_slow_turn(tmp_path: Path, agent: str) -> None:
    server = FakeModels([hang("Thinking hard"), say("After the interrupt.")])
    with trio.fail_after(TIMEOUT):
        async with acp_session(tmp_path, agent, server) as rig:
            assert await rig.prompt("go slowly") == "prompted"
            await server.wait_for(lambda: server.hanging == 1)
            await rig.client.ok("session.interrupt", session_id=rig.sid)
            (result,) = of(await rig.until(is_kind("result")), "result")
            assert (result["stop_reason"], result["is_error"]) == ("interrupted", False)
            events = await rig.turn("still there?")
            assert of(events, "result")[0]["stop_reason"] == "end_turn"
            assert said(events) == "After the interrupt."


@pytest.mark.parametrize("agent", AGENTS)
async def test_three_turns_on_one_process(tmp_path: Path, agent: str) -> None:
    server = FakeModels([say("One."), say("Two."), say("Three.")])
    with trio.fail_after(TIMEOUT):
        async with acp_session(tmp_path, agent, server) as rig:
            pid = await rig.pid()
            for text, answer in (("first", "One."), ("second", "Two."), ("third", "Three.")):
                events = await rig.turn(text)
                assert said(events) == answer
                (result,) = of(events, "result")
                assert result["stop_reason"] == "end_turn"
                assert await rig.pid() == pid
            info = await rig.info()
            assert (info["restarts"], info["state"]) == (0, "idle")
    third = server.model_requests()[2]
    assert carries(third, "first") and carries(third, "second") and carries(third, "Two.")


@pytest.mark.slow
@pytest.mark.timeout(RESTART_TIMEOUT + 30)
@pytest.mark.parametrize("agent", AGENTS)
async def test_sigkill_restarts_the_agent_and_resumes_the_conversation(tmp_path: Path,
                                                                       agent: str) -> None:
    server = FakeModels([say("Noted: apricot."), say("Apricot.")])
    with trio.fail_after(RESTART_TIMEOUT):
        async with acp_session(tmp_path, agent, server) as rig:
            assert said(await rig.turn("remember apricot")) == "Noted: apricot."
            vendor = (await rig.info())["vendor_session_id"]
            assert vendor
            old = await rig.pid()
            before = family(old)
            os.kill(old, signal.SIGKILL)
            # Up to the exit, then to the new process's init: an agent may send its command list
            # (available_commands_update: an ``init`` with tools) after the first turn's result.
            events = await rig.until(is_kind("exit"))
            events += await rig.until(is_kind("init"))
            (exit_event,) = of(events, "exit")
            assert (exit_event["reason"], exit_event["signal"]) == ("crashed", "SIGKILL")
            assert of(events, "restarted")[0]["attempt"] == 1
            assert of(events, "init")[-1]["vendor_session_id"] == vendor
            assert of(events, "error") == []  # the session was resumed, not replaced
            assert wait_gone(before) == []
            await rig.until(is_kind("status", state="idle"))
            events = await rig.turn("which word?")
            assert said(events) == "Apricot."
            assert (await rig.info())["restarts"] == 1
    resumed = server.model_requests()[1]
    assert carries(resumed, "remember apricot") and carries(resumed, "which word?")


@pytest.mark.parametrize("agent", AGENTS)
async def test_close_mid_turn_leaves_no_process(tmp_path: Path, agent: str) -> None:
    server = FakeModels([hang("Waiting")])
    state = tmp_path / "state"
    with trio.fail_after(TIMEOUT):
        async with acp_session(tmp_path, agent, server) as rig:
            assert await rig.prompt("wait") == "prompted"
            await server.wait_for(lambda: server.hanging == 1)
            pid = await rig.pid()
            before = family(pid)
            assert pid in marked(state)
            await close_and_check_gone(rig, state, before)


async def test_harness_list_shows_every_acp_profile(daemon: DaemonProc) -> None:
    with trio.fail_after(TIMEOUT):
        async with raw_client(daemon) as client:
            listed = {h["harness"]: h for h in (await client.ok("harness.list"))["harnesses"]}
    acp = {"gemini", "copilot", "claude-acp", "codex-acp", "opencode-acp", "cursor", "omp", "grok"}
    assert acp <= set(listed)
    for agent in AGENTS:
        if binary(agent) is not None:
            entry = listed[agent]
            assert entry["available"] is True, entry
            assert PINNED[agent] in entry["version"]
            assert entry["features"]["permissions"] and entry["features"]["interrupt"]
    for name in acp - set(AGENTS):
        entry = listed[name]
        assert entry["available"] is (entry["path"] is not None and entry["reason"] is None)
        if entry["path"] is None:
            assert entry["reason"].endswith("not found")
