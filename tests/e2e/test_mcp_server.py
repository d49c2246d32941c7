"""``corral mcp-server`` driven by the ``mcp`` SDK's own client over stdio, against a real daemon.

The server is a client of the daemon: sessions it creates are ordinary sessions (a raw protocol
client sees them and their events), a permission it decides is decided in the daemon (by the
name ``mcp:<the MCP client's name>``), and a daemon it finds down is started (and reported as
``daemon_not_running`` when it is down at the time of a call).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types
import pytest
import trio
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.stdio import StdioServerParameters

from tests.actors.workspace.gitrig import git, make_repo

from .daemonproc import REPO, DaemonProc, raw_client, start_daemon, stop_daemon

pytestmark = pytest.mark.timeout(120)

TIMEOUT = 60


def server_params(state: Path, *extra: str) -> StdioServerParameters:
    """``corral mcp-server`` on ``state``, run from this source tree."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "actors.app", "mcp-server", "--state-dir", str(state), *extra],
        cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO)})


@asynccontextmanager
async def mcp_client(state: Path, *extra: str, **options: Any) -> AsyncIterator[Client]:
    async with Client(server_params(state, *extra), client_info=mcp_types.Implementation(
            name="e2e-mcp", version="1"), **options) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool call that must succeed: its JSON object (the text and the structured copy agree)."""
    with trio.fail_after(TIMEOUT):
        result = await client.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, text
    assert json.loads(text) == result.structured_content
    answer: dict[str, Any] = result.structured_content or {}
    return answer


async def failing(client: Client, tool: str, **arguments: Any) -> str:
    """A tool call that must fail: its text."""
    with trio.fail_after(TIMEOUT):
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text


async def corral_stop(state: Path) -> int:
    """``corral stop``: its exit code (1 when no daemon ran)."""
    done = await trio.run_process([sys.executable, "-m", "actors.app", "stop", "--state-dir", str(state)],
                                  cwd=str(REPO), capture_stdout=True, capture_stderr=True, check=False)
    return done.returncode


@asynccontextmanager
async def daemon_at(tmp_path: Path) -> AsyncIterator[DaemonProc]:
    daemon = await start_daemon(tmp_path / "state")
    try:
        yield daemon
    finally:
        with trio.CancelScope(shield=True):
            assert await stop_daemon(daemon) == 0


async def test_it_starts_the_daemon_and_its_sessions_are_ordinary_sessions(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = tmp_path / "corral.toml"
    config.write_text("[daemon]\nport = 0\n")
    work = tmp_path / "work"
    work.mkdir()
    try:
        async with mcp_client(state, "--config", str(config)) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"corral_list_sessions", "corral_create_session", "corral_prompt",
                             "corral_get_session", "corral_read_events", "corral_decide",
                             "corral_interrupt", "corral_close_session", "corral_workspace_diff",
                             "corral_workspace_merge"}
            info = json.loads((state / "daemon.json").read_text())  # the server started the daemon
            daemon = DaemonProc(state, None, info)  # type: ignore[arg-type]
            session = (await call(client, "corral_create_session", harness="fake", cwd=str(work),
                                  name="delegate"))["session"]
            sid = session["id"]
            assert session["harness"] == "fake" and session["name"] == "delegate"

            answer = await call(client, "corral_prompt", session_id=sid, text="hello there")
            assert answer == {"state": "idle", "text": "echo: hello there", "stop_reason": "end_turn",
                              "is_error": False, "usage": answer["usage"], "cost_usd": None}
            assert answer["usage"]["output_tokens"] > 0
            failed = await call(client, "corral_prompt", session_id=sid, text="/fail")
            assert failed["is_error"] is True and failed["error"]["code"] == "fake.turn_failed"

            async with raw_client(daemon) as other:  # every other client sees the session
                [listed] = (await other.ok("session.list"))["sessions"]
                assert listed["id"] == sid
                await other.ok("session.subscribe", session_id=sid)
                frames = await other.events_until(sid, lambda f: f["event"]["type"] == "result")
                assert {"type": "user", "text": "hello there", "delivery": "prompted"} in [f["event"] for f in frames]

            listed = (await call(client, "corral_list_sessions", state="idle"))["sessions"]
            assert [s["id"] for s in listed] == [sid]
            assert (await call(client, "corral_list_sessions", cwd=str(tmp_path)))["sessions"] == []
            assert [s["id"] for s in (await call(client, "corral_list_sessions", cwd=str(work)))["sessions"]] == [sid]

            got = await call(client, "corral_get_session", session_id=sid)
            assert got["session"]["id"] == sid and got["open_permissions"] == []
            assert got["last_result"]["is_error"] is True and got["last_result"]["type"] == "result"

            events = (await call(client, "corral_read_events", session_id=sid, after_seq=2, limit=3))["events"]
            assert [e["seq"] for e in events] == [3, 4, 5]
            assert all(e["type"] == "event" and e["session_id"] == sid for e in events)
            users = [e["event"]["text"] for e in (await call(client, "corral_read_events", session_id=sid,
                                                              limit=1000))["events"]
                     if e["event"]["type"] == "user"]
            assert users == ["hello there", "/fail"]

            assert (await failing(client, "corral_get_session", session_id="s-nope")).startswith("unknown_session:")
            assert (await failing(client, "corral_prompt", session_id=sid)).startswith("bad_request:")
            assert (await failing(client, "corral_workspace_diff", session_id=sid)).startswith("unsupported:")

            closed = await call(client, "corral_close_session", session_id=sid)
            assert closed["session"]["state"] == "closed"
            assert (await failing(client, "corral_prompt", session_id=sid, text="more")).startswith("session_closed:")

            assert await corral_stop(state) == 0
            down = await failing(client, "corral_list_sessions")
            assert down.startswith("daemon_not_running:")
            assert daemon.token not in down
    finally:
        with trio.CancelScope(shield=True):
            await corral_stop(state)


async def test_a_permission_stops_the_turn_unless_the_policy_answers_it(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    async with daemon_at(tmp_path) as daemon, mcp_client(daemon.state_dir) as client, \
            raw_client(daemon) as other:
        auto = (await call(client, "corral_create_session", harness="fake", cwd=str(work),
                           permission_mode="auto"))["session"]["id"]
        answer = await call(client, "corral_prompt", session_id=auto, text="/ask echo allowed")
        assert answer["state"] == "idle" and answer["is_error"] is False  # the policy allowed it

        sid = (await call(client, "corral_create_session", harness="fake", cwd=str(work)))["session"]["id"]
        stopped = await call(client, "corral_prompt", session_id=sid, text="/ask echo asked")
        assert stopped == {"state": "waiting_for_permission", "waiting_for_permission": {
            "permission_id": "p1", "tool": "bash", "input": {"command": "echo asked"}}}
        got = await call(client, "corral_get_session", session_id=sid)
        assert got["session"]["state"] == "waiting"
        assert got["open_permissions"] == [stopped["waiting_for_permission"]]

        await other.ok("session.subscribe", session_id=sid)
        decided = await call(client, "corral_decide", session_id=sid, permission_id="p1", decision="allow")
        assert decided["session"]["id"] == sid
        frames = await other.events_until(sid, lambda f: f["event"]["type"] == "result")
        [verdict] = [f["event"] for f in frames if f["event"]["type"] == "permission_decided"]
        assert verdict["decision"] == "allow" and verdict["by_name"] == "mcp:e2e-mcp"
        [tool] = [f["event"] for f in frames if f["event"]["type"] == "tool" and f["event"]["phase"] == "completed"]
        assert "asked" in json.dumps(tool["output"])
        assert (await call(client, "corral_get_session", session_id=sid))["open_permissions"] == []
        again = await failing(client, "corral_decide", session_id=sid, permission_id="p1", decision="deny")
        assert again.startswith(("unknown_permission:", "already_decided:"))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_that_can_elicit_is_asked_and_its_answer_decides(tmp_path: Path, mode: str) -> None:
    asked: list[str] = []

    async def elicit(ctx: ClientRequestContext, params: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
        asked.append(params.message)
        schema = params.requested_schema  # type: ignore[union-attr]
        assert schema["properties"]["decision"]["enum"] == ["allow", "deny", "allow_always"]
        return mcp_types.ElicitResult(action="accept", content={"decision": "deny"})

    work = tmp_path / "work"
    work.mkdir()
    async with daemon_at(tmp_path) as daemon, mcp_client(daemon.state_dir, elicitation_callback=elicit,
                                                          mode=mode) as client:
        sid = (await call(client, "corral_create_session", harness="fake", cwd=str(work)))["session"]["id"]
        answer = await call(client, "corral_prompt", session_id=sid, text="/ask echo elicited")
        assert answer["state"] == "idle" and answer["stop_reason"] == "end_turn"
        [message] = asked
        assert sid in message and "bash" in message and "echo elicited" in message
        events = [e["event"] for e in (await call(client, "corral_read_events", session_id=sid))["events"]]
        [verdict] = [e for e in events if e["type"] == "permission_decided"]
        assert verdict["decision"] == "deny" and verdict["by_name"] == "mcp:e2e-mcp"
        assert any(e["type"] == "tool" and e["output"] == "denied by user" for e in events)


async def test_progress_while_it_waits_and_running_when_the_wait_runs_out(tmp_path: Path) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    work = tmp_path / "work"
    work.mkdir()
    async with daemon_at(tmp_path) as daemon, mcp_client(daemon.state_dir) as client:
        sid = (await call(client, "corral_create_session", harness="fake", cwd=str(work)))["session"]["id"]
        with trio.fail_after(TIMEOUT):
            result = await client.call_tool("corral_prompt", {"session_id": sid, "text": "/tool echo step"},
                                            progress_callback=on_progress)
        assert result.structured_content is not None and result.structured_content["is_error"] is False
        messages = [m for _, m in progress]
        assert "tool bash started" in messages and "tool bash completed" in messages
        assert [d for d, _ in progress] == sorted(d for d, _ in progress)

        running_from = (await call(client, "corral_get_session", session_id=sid))["session"]["last_seq"]
        running = await call(client, "corral_prompt", session_id=sid, text="/slow 50", wait_s=0.5)
        assert running == {"state": "running"}
        assert (await call(client, "corral_get_session", session_id=sid))["session"]["state"] == "running"
        await call(client, "corral_interrupt", session_id=sid)
        async with raw_client(daemon) as other:
            await other.ok("session.subscribe", session_id=sid)
            frames = await other.events_until(sid, lambda f: f["event"]["type"] == "result"
                                              and f["seq"] > running_from)
        results = [f["event"] for f in frames if f["event"]["type"] == "result"]
        assert results[-1]["stop_reason"] == "interrupted"


async def test_a_worktree_session_is_reviewed_and_merged_through_the_tools(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with daemon_at(tmp_path) as daemon, mcp_client(daemon.state_dir) as client:
        session = (await call(client, "corral_create_session", harness="fake", cwd=str(repo),
                              name="mcp-wt", worktree=True))["session"]
        sid = session["id"]
        assert session["workspace"]["branch"] == "corral/mcp-wt" and session["cwd"] != str(repo)
        answer = await call(client, "corral_prompt", session_id=sid, text="/tool echo made > made.txt")
        assert answer["is_error"] is False
        diff = await call(client, "corral_workspace_diff", session_id=sid, stat=True)
        assert diff == {"diff": "", "truncated": False, "files": [
            {"path": "made.txt", "status": "added", "added": 1, "removed": 0}]}
        merged = await call(client, "corral_workspace_merge", session_id=sid, strategy="squash")
        assert merged["commit"] == git(repo, "rev-parse", "HEAD")
        assert (repo / "made.txt").read_text() == "made\n"
