"""``corral acp`` driven by a real ACP client: the ``agent-client-protocol`` SDK's client side
plays the editor, over stdio, against a real daemon that the facade starts itself.

The SDK is asyncio, so each test is a plain function running ``asyncio.run``. A second corral
client is the ``corral`` CLI (the typed client library underneath): it answers a permission
first, and reads the session's log to see what the daemon recorded. The fake harness serves
the first tests; the last one runs a native session against the fake model server.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema

from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels
from tests.fakes.model_thread import ServerThread

from tests.daemonconfig import without_prewarm

from .daemonproc import REPO

pytestmark = [pytest.mark.slow]

TIMEOUT = 90


class Editor:
    """The ACP client: records every update; permissions are answered by ``answer``."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.asked: list[tuple[str, Any]] = []
        self.answer = "allow_once"
        self.before_answer: Any = None
        self.changed = asyncio.Event()

    async def request_permission(self, options: list[schema.PermissionOption], session_id: str,
                                 tool_call: schema.ToolCallUpdate, **kwargs: Any) -> schema.RequestPermissionResponse:
        self.asked.append((session_id, tool_call))
        self.changed.set()
        assert {o.kind for o in options} >= {"allow_once", "reject_once"}
        if self.before_answer is not None:
            await self.before_answer(session_id, tool_call)
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=self.answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    async def until(self, predicate: Any) -> None:
        while not predicate():
            self.changed.clear()
            await self.changed.wait()

    def of(self, kind: str, since: int = 0) -> list[Any]:
        return [u for _, u in self.updates[since:] if u.session_update == kind]

    def text(self, since: int = 0) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk", since))


def corral(state: Path, *args: str) -> str:
    """Run a ``corral`` command (another client of the same daemon)."""
    done = subprocess.run([sys.executable, "-m", "actors.app", *args, "--state-dir", str(state)],
                          capture_output=True, text=True, cwd=REPO, env=_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def log_of(state: Path, session_id: str) -> list[dict[str, Any]]:
    return [json.loads(line)["event"] for line in corral(state, "logs", session_id, "--json").splitlines()]


def daemon_config(state: Path) -> str:
    """A configuration for the daemon a facade starts: a free port (two test workers may each
    start one) and the background warm-ups off."""
    base = state.parent / "acp-daemon.toml"
    if not base.exists():
        base.write_text("[daemon]\nport = 0\n", encoding="utf-8")
    return without_prewarm(state.parent / "acp-config", base)


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


@asynccontextmanager
async def facade(state: Path, editor: Editor, *args: str,
                 **env: str) -> AsyncIterator[acp.ClientSideConnection]:
    """``corral acp`` as an editor starts it, initialized. The daemon it starts listens on a
    free port (two test workers may each start one) with the background warm-ups off."""
    async with acp.spawn_agent_process(
            editor, sys.executable, "-m", "actors.app", "acp", "--state-dir", str(state),
            "--config", daemon_config(state), *args,
            env=_env(**env), cwd=str(REPO), transport_kwargs={"limit": 16 * 1024 * 1024}) as (conn, _):
        init = await conn.initialize(protocol_version=1,
                                     client_info=schema.Implementation(name="testeditor", version="1"))
        assert init.protocol_version == 1
        yield conn


@pytest.fixture
def state(tmp_path: Path) -> Any:
    yield tmp_path / "state"
    if (tmp_path / "state" / "daemon.json").exists():
        subprocess.run([sys.executable, "-m", "actors.app", "stop", "--state-dir", str(tmp_path / "state")],
                       capture_output=True, cwd=REPO, env=_env(), timeout=90)


def test_the_fake_harness_through_an_editor(tmp_path: Path, state: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()

    async def scenario() -> None:
        editor = Editor()
        async with facade(state, editor, "--harness", "fake") as conn:
            # initialize told what corral offers
            new = await conn.new_session(cwd=str(work), mcp_servers=[], corral={"name": "from-zed"})
            sid = new.session_id
            assert sid.startswith("s-")
            assert new.modes is not None and new.modes.current_mode_id == "ask"
            assert [m.id for m in new.modes.available_modes] == ["ask", "auto_edit", "auto", "inherit"]

            # a prompt streams its text and answers when the turn's result arrives
            done = await conn.prompt(session_id=sid, prompt=[acp.text_block("hello")])
            assert done.stop_reason == "end_turn"
            assert editor.text() == "echo: hello"
            assert len(editor.of("agent_message_chunk")) == 3  # streamed in three deltas
            assert editor.of("usage_update")[-1].used == 13
            assert editor.of("user_message_chunk") == []  # the editor's own prompt is not echoed

            # a tool asks; the editor allows it
            mark = len(editor.updates)
            done = await conn.prompt(session_id=sid, prompt=[acp.text_block("/ask echo allowed")])
            assert done.stop_reason == "end_turn"
            (asked_sid, asked), = editor.asked
            assert asked_sid == sid and asked.raw_input == {"command": "echo allowed"}
            assert asked.kind == "execute" and asked.title == "bash: echo allowed"
            started = editor.of("tool_call", mark)
            assert [(t.kind, t.status, t.raw_input) for t in started] == [
                ("execute", "in_progress", {"command": "echo allowed"})]
            ended = [u for u in editor.of("tool_call_update", mark) if u.status == "completed"]
            assert [u.tool_call_id for u in ended] == [started[0].tool_call_id]
            assert ended[0].content[0].content.text == "allowed\n"
            decided = [e for e in log_of(state, sid) if e["type"] == "permission_decided"]
            assert [d["decision"] for d in decided] == ["allow"]
            assert decided[0]["by"].startswith("c-")  # a connection: the facade's, not the policy
            assert decided[0]["by_name"] == "acp:testeditor"  # named for people after the editor
            connections = json.loads(corral(state, "status", "--json"))["status"]["connections"]
            assert [c["name"] for c in connections if c["connection_id"] == decided[0]["by"]] == [
                "acp:testeditor"]

            # another client decides first: the editor's request is withdrawn, its answer ignored
            async def other_client_first(session_id: str, tool_call: Any) -> None:
                await asyncio.to_thread(corral, state, "approve", session_id, tool_call.tool_call_id, "--deny")
                await editor.until(lambda: any(
                    u.tool_call_id == tool_call.tool_call_id and u.status == "failed"
                    for u in editor.of("tool_call_update")))

            editor.before_answer = other_client_first
            mark = len(editor.updates)
            done = await conn.prompt(session_id=sid, prompt=[acp.text_block("/ask echo denied")])
            assert done.stop_reason == "end_turn"
            editor.before_answer = None
            assert "denied by user" in "".join(
                c.content.text for u in editor.of("tool_call_update", mark) if u.status == "failed"
                for c in u.content or [])
            decided = [e for e in log_of(state, sid) if e["type"] == "permission_decided"]
            assert [d["decision"] for d in decided] == ["allow", "deny"]  # the late allow lost

            # cancel interrupts the turn
            mark = len(editor.updates)
            turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=[acp.text_block("/slow 200")]))
            await editor.until(lambda: editor.of("agent_message_chunk", mark))
            await conn.cancel(session_id=sid)
            assert (await turn).stop_reason == "cancelled"

            # set_mode: auto answers without asking the editor, and every client sees the mode
            await conn.set_session_mode(session_id=sid, mode_id="auto")
            await editor.until(lambda: editor.of("current_mode_update"))
            assert editor.of("current_mode_update")[-1].current_mode_id == "auto"
            asked_before = len(editor.asked)
            done = await conn.prompt(session_id=sid, prompt=[acp.text_block("/ask echo auto")])
            assert done.stop_reason == "end_turn" and len(editor.asked) == asked_before
            assert json.loads(corral(state, "ls", "--json"))[0]["permissions"] == "auto"

            # the model config option switches the model
            changed = await conn.set_config_option(config_id="model", session_id=sid, value="fake-2")
            assert [o.current_value for o in changed.config_options if o.id == "model"] == ["fake-2"]
            assert json.loads(corral(state, "ls", "--json"))[0]["model"] == "fake-2"

            # a prompt by another client shows as the user's message
            mark = len(editor.updates)
            await asyncio.to_thread(corral, state, "send", sid, "from", "the", "cli")
            await editor.until(lambda: editor.text(mark) == "echo: from the cli")
            assert [u.content.text for u in editor.of("user_message_chunk", mark)] == ["from the cli"]

            listed = await conn.list_sessions(cwd=str(work))
            assert [(s.session_id, s.title, s.cwd) for s in listed.sessions] == [(sid, "from-zed", str(work))]
            assert listed.sessions[0].updated_at
            assert (await conn.list_sessions(cwd=str(tmp_path))).sessions == []

        # a new facade (the editor restarted it): resume attaches without a replay, load
        # replays the history before it answers
        editor = Editor()
        async with facade(state, editor) as conn:
            resumed = await conn.resume_session(cwd=str(work), session_id=sid, mcp_servers=[])
            assert resumed.modes is not None and editor.updates == []
            loaded = await conn.load_session(cwd=str(work), session_id=sid, mcp_servers=[])
            assert loaded.modes is not None and loaded.modes.current_mode_id == "auto"
            replayed = [u.content.text for u in editor.of("user_message_chunk")]
            assert replayed[:2] == ["hello", "/ask echo allowed"] and replayed[-1] == "from the cli"
            assert editor.text().startswith("echo: hello")
            mark = len(editor.updates)
            done = await conn.prompt(session_id=sid, prompt=[acp.text_block("again")])
            assert done.stop_reason == "end_turn" and editor.text(mark) == "echo: again"
            await conn.close_session(session_id=sid)
        assert json.loads(corral(state, "ls", "--json"))[0]["state"] == "closed"

    asyncio.run(asyncio.wait_for(scenario(), TIMEOUT))


async def _rpc_lines(process: asyncio.subprocess.Process, count: int) -> list[dict[str, Any]]:
    assert process.stdout is not None
    return [json.loads(await process.stdout.readline()) for _ in range(count)]


def test_stdout_carries_only_the_protocol_and_the_daemon_is_started_on_demand(state: Path) -> None:
    async def scenario() -> tuple[list[dict[str, Any]], bytes]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "actors.app", "acp", "--state-dir", str(state),
            "--config", daemon_config(state), cwd=str(REPO),
            env=_env(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        assert process.stdin is not None and process.stderr is not None
        requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": 1, "clientInfo": {"name": "raw", "version": "0"}}},
                    {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}},
                    {"jsonrpc": "2.0", "method": "session/cancel", "params": {"no": "session id"}},
                    {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s-nope"}},
                    {"jsonrpc": "2.0", "id": 3, "method": "no/such", "params": {}}]
        process.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in requests) + b"{not json\n")
        await process.stdin.drain()
        lines = await _rpc_lines(process, 4)
        process.stdin.close()
        assert await process.wait() == 0  # the editor closed stdin: the facade ends cleanly
        assert process.stdout is not None and await process.stdout.read() == b""
        return lines, await process.stderr.read()

    lines, stderr = asyncio.run(asyncio.wait_for(scenario(), TIMEOUT))
    assert all(line["jsonrpc"] == "2.0" for line in lines)
    by_id = {line["id"]: line for line in lines}
    assert by_id[None]["error"]["code"] == -32700  # the garbage line, answered and survived
    # (as were the two bad session/cancel notifications before it, which nobody is answered for)
    assert by_id[1]["result"]["agentInfo"]["name"] == "corral"
    capabilities = by_id[1]["result"]["agentCapabilities"]
    assert capabilities["loadSession"] is True and capabilities["mcpCapabilities"] == {"http": True}
    assert capabilities["sessionCapabilities"] == {"list": {}, "resume": {}, "close": {}}
    assert by_id[2]["result"] == {"sessions": []}
    assert by_id[3]["error"]["code"] == -32601
    assert b"corral daemon started" in stderr  # said on stderr, never on stdout
    assert (state / "daemon.json").exists()


def test_a_native_session_through_an_editor(tmp_path: Path, state: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    server = FakeModels([call("write", path="hello.txt", content="hello\n"), say("Wrote it.")])

    async def scenario(base_url: str) -> None:
        editor = Editor()
        # the facade starts the daemon, which inherits the key from the editor's environment
        async with facade(state, editor, "--harness", "native",
                          OPENAI_API_KEY="sk-acp-e2e-0123456789") as conn:
            new = await conn.new_session(cwd=str(work), mcp_servers=[], corral={
                "model": "openai/fake-model", "options": {"base_url": base_url}})
            done = await conn.prompt(session_id=new.session_id, prompt=[acp.text_block("write hello.txt")])
            assert done.stop_reason == "end_turn"
            assert (work / "hello.txt").read_text() == "hello\n"
            (asked_sid, asked), = editor.asked  # ask mode: the write asked the editor
            assert asked.kind == "edit" and asked.locations[0].path == str(work / "hello.txt")
            [started] = editor.of("tool_call")
            assert started.kind == "edit" and started.title == "write: hello.txt"
            [ended] = [u for u in editor.of("tool_call_update") if u.status == "completed"]
            diffs = [c for c in ended.content if c.type == "diff"]
            assert [(d.path, d.old_text, d.new_text) for d in diffs] == [
                (str(work / "hello.txt"), None, "hello\n")]
            assert editor.text() == "Wrote it."
            assert new.config_options is not None
            assert any(o.id == "model" and o.current_value == "openai/fake-model"
                       for o in new.config_options)

    with ServerThread(server) as thread:
        asyncio.run(asyncio.wait_for(scenario(f"{thread.url}/v1"), TIMEOUT))


def test_a_permission_open_when_the_facade_dies_is_asked_again_after_load(tmp_path: Path, state: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()

    async def scenario() -> None:
        editor = Editor()
        never = asyncio.Event()

        async def hold(session_id: str, tool_call: Any) -> None:
            await never.wait()  # the editor shows the request; the facade dies meanwhile

        editor.before_answer = hold
        async with acp.spawn_agent_process(
                editor, sys.executable, "-m", "actors.app", "acp", "--state-dir", str(state),
                "--config", daemon_config(state), "--harness", "fake", env=_env(),
                cwd=str(REPO)) as (conn, process):
            await conn.initialize(protocol_version=1)
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            turn = asyncio.create_task(conn.prompt(session_id=sid, prompt=[acp.text_block("/ask echo later")]))
            await editor.until(lambda: editor.asked)
            process.kill()
            await process.wait()
            turn.cancel()

        editor = Editor()
        async with facade(state, editor) as conn:
            await conn.load_session(cwd=str(work), session_id=sid, mcp_servers=[])
            (asked_sid, asked), = editor.asked  # asked again once the replay was sent
            assert asked_sid == sid and asked.raw_input == {"command": "echo later"}
            await editor.until(lambda: any(u.status == "completed" for u in editor.of("tool_call_update")))
            [done] = [u for u in editor.of("tool_call_update") if u.status == "completed"]
            assert done.content[0].content.text == "later\n"

    asyncio.run(asyncio.wait_for(scenario(), TIMEOUT))
