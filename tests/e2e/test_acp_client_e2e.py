"""ACP client services through a real daemon: the agent's file reads and writes and its
terminals are served by the session (``fs/*``, ``terminal/*``), offline against the fake model
server. Each test reads the session's frame log (``options.log_path``) to see what the real CLI
sent, so the claims are about the wire, not only about the file that appeared.

Gemini CLI 0.61.0 sends ``fs/read_text_file`` (a missing file answered empty: its quirk) and
``fs/write_text_file`` for ``write_file``, and runs ``run_shell_command`` itself (no
``terminal/*``); claude-code-acp runs its ``Bash`` tool in a client terminal.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels

from .test_acp_e2e import acp_session
from .vendor_rig import close_and_check_gone, family, of

pytestmark = [pytest.mark.vendor]

TIMEOUT = 100


def frames(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def agent_asked(log: Path, method: str) -> list[dict[str, Any]]:
    """The requests the agent sent for ``method``, each with the answer corral wrote back."""
    every = frames(log)
    asked = [f["frame"] for f in every if f["dir"] == "in" and isinstance(f["frame"], dict)
             and f["frame"].get("method") == method]
    answers = {f["frame"]["id"]: f["frame"] for f in every if f["dir"] == "out"
               and isinstance(f["frame"], dict) and "method" not in f["frame"]}
    return [{**request, "answer": answers.get(request["id"])} for request in asked]


async def test_gemini_writes_its_file_through_the_session(tmp_path: Path) -> None:
    work, log = tmp_path / "work", tmp_path / "frames.jsonl"
    server = FakeModels([call("write_file", file_path=str(work / "hello.txt"), content="hi\n"),
                         say("Wrote it.")])
    with trio.fail_after(TIMEOUT):
        async with acp_session(tmp_path, "gemini", server,
                               options_extra={"log_path": str(log)}) as rig:
            init = json.loads(log.read_text().splitlines()[0])["frame"]
            assert init["params"]["clientCapabilities"] == {
                "fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
            events = await rig.turn("write hello.txt")
    assert (work / "hello.txt").read_text() == "hi\n"
    [write] = agent_asked(log, "fs/write_text_file")
    assert write["params"]["path"] == str(work / "hello.txt") and write["answer"]["result"] is None
    reads = agent_asked(log, "fs/read_text_file")
    assert reads and all(r["answer"]["result"] == {"content": ""} for r in reads)
    ours = [t for t in of(events, "tool") if t["name"] == "write_text_file"]
    assert [(t["kind"], t["phase"], t["is_error"]) for t in ours] == [
        ("edit", "started", False), ("edit", "completed", False)]
    # auto_edit: corral's policy let the write through, and said so.
    decided = of(events, "permission_decided")
    assert decided and all(d["by"] == "policy" for d in decided)


async def test_gemini_cannot_touch_the_state_directory_inside_its_cwd(tmp_path: Path) -> None:
    # The session runs in tmp_path, which holds the daemon's state directory (tmp_path/state).
    log = tmp_path / "frames.jsonl"
    token = tmp_path / "state" / "token"
    server = FakeModels([call("write_file", file_path=str(token), content="pwned"),
                         say("Tried.")])
    with trio.fail_after(TIMEOUT):
        async with acp_session(tmp_path, "gemini", server, cwd=str(tmp_path),
                               options_extra={"log_path": str(log)}) as rig:
            secret = token.read_text()
            events = await rig.turn("overwrite the token")
            assert token.read_text() == secret
    touched = [*agent_asked(log, "fs/read_text_file"), *agent_asked(log, "fs/write_text_file")]
    assert touched, "Gemini did not ask corral for the file"
    for request in touched:
        assert "state directory" in request["answer"]["error"]["message"]
    assert secret not in json.dumps([r.body for r in server.model_requests()])
    assert "state directory" in json.dumps(server.model_requests()[-1].body)
    assert of(events, "result")[-1]["stop_reason"] == "end_turn"


async def test_gemini_runs_its_shell_tool_itself(tmp_path: Path) -> None:
    log = tmp_path / "frames.jsonl"
    server = FakeModels([call("run_shell_command", command="echo made > made.txt"),
                         say("Ran it.")])
    with trio.fail_after(TIMEOUT):
        async with acp_session(tmp_path, "gemini", server, permissions={"mode": "auto"},
                               options_extra={"log_path": str(log)}) as rig:
            await rig.turn("run it")
    assert (tmp_path / "work" / "made.txt").read_text() == "made\n"
    methods = {f["frame"].get("method") for f in frames(log)
               if f["dir"] == "in" and isinstance(f["frame"], dict)}
    assert not any(m and m.startswith("terminal/") for m in methods)


async def test_claude_acp_runs_bash_in_a_session_terminal(tmp_path: Path) -> None:
    log = tmp_path / "frames.jsonl"
    server = FakeModels([call("mcp__acp__Bash", command="echo made > made.txt",
                              description="run it", timeout=10000),
                         say("Ran it.")])
    with trio.fail_after(TIMEOUT):
        async with acp_session(tmp_path, "claude-acp", server, permissions={"mode": "auto"},
                               options_extra={"log_path": str(log)}) as rig:
            await rig.turn("run it")
    assert (tmp_path / "work" / "made.txt").read_text() == "made\n"
    [created] = agent_asked(log, "terminal/create")
    assert created["answer"]["result"]["terminalId"]
    assert agent_asked(log, "terminal/wait_for_exit")[0]["answer"]["result"]["exitCode"] == 0
    assert agent_asked(log, "terminal/release")


@pytest.mark.parametrize("end", ["session.close", "daemon stop"])
async def test_the_end_of_the_session_kills_a_running_terminal_group(tmp_path: Path,
                                                                     end: str) -> None:
    state, fifo = tmp_path / "state", tmp_path / "pids"
    os.mkfifo(fifo)
    # The terminal's shell leaves a grandchild and names both; closing must take both.
    server = FakeModels([call("mcp__acp__Bash", command=f'sleep 300 & echo "$! $$" > {fifo}; wait',
                              description="wait", timeout=600000)])
    with trio.fail_after(TIMEOUT):
        async with acp_session(tmp_path, "claude-acp", server, permissions={"mode": "auto"}) as rig:
            assert await rig.prompt("wait") == "prompted"
            text = await trio.to_thread.run_sync(fifo.read_text, abandon_on_cancel=True)
            sleepers = [int(p) for p in text.split()]
            agent = family(await rig.pid())
            assert not set(sleepers) & set(agent)  # the terminal is the session's child, not the agent's
            if end == "session.close":
                await close_and_check_gone(rig, state, [*agent, *sleepers])
        # On leaving the block the daemon stops (and checks that no marked process is left).
    assert [p for p in sleepers if psutil.pid_exists(p)
            and psutil.Process(p).status() != psutil.STATUS_ZOMBIE] == []
