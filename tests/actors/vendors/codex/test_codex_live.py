"""End to end without a daemon: the real ``codex app-server`` (pinned 0.171.0) spawned from our
launch builder, driven by our translator, against the fake OpenAI server on 127.0.0.1.

Skipped when no Codex binary is installed, unless ``CI`` is set (then missing Codex fails).
Install with ``npm install -g @openai/codex@0.171.0``; ``CORRAL_CODEX_BINARY`` picks another.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.vendors.codex import mcp_args
from protocol.events import Assistant, Init, Permission, Result, Tool
from protocol.models import McpServer
from tests.fakes.openai_server import Exec, FakeOpenAI, Stall, Text

from .live import LiveCodex, codex_binary, make_request, stderr_tail
from .record import echo_server, mcp_replies

BINARY = codex_binary()
pytestmark = [pytest.mark.vendor, pytest.mark.skipif(
    BINARY is None and not os.environ.get("CI"),
    reason="codex is not installed (npm install -g @openai/codex@0.171.0)")]

TIMEOUT = 90


def _binary() -> str:
    if BINARY is None:
        pytest.fail("CI is set but codex is not installed (npm install -g @openai/codex@0.171.0)")
    return BINARY


@asynccontextmanager
async def _codex(tmp: Path, server: FakeOpenAI, **fields: Any) -> AsyncIterator[LiveCodex]:
    """A ready Codex session (thread open) against ``server``; closed on exit."""
    binary = _binary()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve)
        live = LiveCodex(make_request(tmp, port, binary, **fields), stderr_path=tmp / "stderr.txt")
        try:
            await nursery.start(live.run)
            await live.wait_for(lambda e: isinstance(e, Init))
            yield live
        except BaseException:
            print(stderr_tail(tmp / "stderr.txt"))
            raise
        finally:
            await live.close()
            nursery.cancel_scope.cancel()


async def _turn(live: LiveCodex, text: str) -> tuple[Result, list[Any]]:
    start = len(live.events)
    await live.call("prompt", text)
    result = await live.wait_for(lambda e: isinstance(e, Result), start)
    assert isinstance(result, Result)
    return result, live.events[start:]


def _input_items(body: Any, kind: str) -> list[dict[str, Any]]:
    return [item for item in body["input"] if item.get("type") == kind]


def _user_texts(body: Any) -> list[str]:
    return [part["text"] for item in _input_items(body, "message") if item["role"] == "user"
            for part in item["content"] if part.get("type") == "input_text"]


async def test_shell_command_creates_a_file_and_a_second_turn_reuses_the_process(
        tmp_path: Path) -> None:
    server = FakeOpenAI([Exec(cmd="printf made > made.txt && echo created", call_id="call_a"),
                         Text(text="Created it."), Text(text="Second answer.")])
    with trio.fail_after(TIMEOUT):
        async with _codex(tmp_path, server) as live:
            result, events = await _turn(live, "create made.txt")
            assert not result.is_error and result.stop_reason == "end_turn"
            assert (tmp_path / "work" / "made.txt").read_text() == "made"
            done = [e for e in events if isinstance(e, Tool) and e.phase == "completed"]
            assert [(t.kind, t.output, t.is_error) for t in done] == [("exec", "created\n", False)]
            first, second = server.responses()
            (output,) = _input_items(second.body, "function_call_output")
            assert output["call_id"] == "call_a" and "created" in output["output"]

            pid = live.process.pid if live.process else None
            result, events = await _turn(live, "and now?")
            assert result.stop_reason == "end_turn"
            assert "".join(e.text for e in events if isinstance(e, Assistant)) == "Second answer."
            assert live.process is not None and live.process.pid == pid
            third = server.responses()[2].body
            assert _user_texts(third)[-2:] == ["create made.txt", "and now?"]
            assert _input_items(third, "function_call_output")[0]["call_id"] == "call_a"


async def test_denied_approval_keeps_the_command_from_running(tmp_path: Path) -> None:
    server = FakeOpenAI([Exec(cmd="touch denied.txt", sandbox_permissions="require_escalated",
                              justification="May I?"), Text(text="Not run.")])
    with trio.fail_after(TIMEOUT):
        async with _codex(tmp_path, server) as live:
            start = len(live.events)
            await live.call("prompt", "touch denied.txt")
            ask = await live.wait_for(lambda e: isinstance(e, Permission), start)
            assert isinstance(ask, Permission) and ask.kind == "exec"
            assert "touch denied.txt" in ask.input["command"]
            await live.call("decide", ask.permission_id, "deny")
            result = await live.wait_for(lambda e: isinstance(e, Result), start)
            assert isinstance(result, Result) and result.stop_reason == "end_turn"
    assert not (tmp_path / "work" / "denied.txt").exists()
    (output,) = _input_items(server.responses()[1].body, "function_call_output")
    assert "rejected" in output["output"]


async def test_interrupt_during_a_slow_turn(tmp_path: Path) -> None:
    server = FakeOpenAI([Stall(text="Thinking"), Text(text="After the interrupt.")])
    with trio.fail_after(TIMEOUT):
        async with _codex(tmp_path, server) as live:
            start = len(live.events)
            await live.call("prompt", "go slowly")
            await live.wait_for(lambda e: isinstance(e, Assistant), start)
            await server.wait_for(lambda: server.stalled == 1)
            sent = await live.call("interrupt")
            assert len(sent) == 1
            result = await live.wait_for(lambda e: isinstance(e, Result), start)
            assert isinstance(result, Result)
            assert (result.stop_reason, result.is_error) == ("interrupted", False)
            await server.wait_for(lambda: server.stalled == 0)  # Codex dropped the stream
            result, _ = await _turn(live, "still there?")
            assert result.stop_reason == "end_turn"


async def test_steer_reaches_the_model_within_the_turn(tmp_path: Path) -> None:
    server = FakeOpenAI([Stall(text="Working"), Text(text="With pears.")])
    with trio.fail_after(TIMEOUT):
        async with _codex(tmp_path, server) as live:
            start = len(live.events)
            await live.call("prompt", "start")
            await live.wait_for(lambda e: isinstance(e, Assistant), start)
            await server.wait_for(lambda: server.stalled == 1)
            assert await live.call("steer", "mention pears")
            # Codex 0.171.0 ends the in-flight sampling and samples again with the steer.
            second = (await server.wait_responses(2))[1].body
            assert _user_texts(second)[-2:] == ["start", "mention pears"]
            result = await live.wait_for(lambda e: isinstance(e, Result), start)
            assert isinstance(result, Result) and result.stop_reason == "end_turn"
            assert len([e for e in live.events[start:] if isinstance(e, Result)]) == 1


async def test_model_instructions_and_set_model_reach_the_api(tmp_path: Path) -> None:
    server = FakeOpenAI([Text(text="one"), Text(text="two")])
    with trio.fail_after(TIMEOUT):
        async with _codex(tmp_path, server, instructions="Answer tersely. MARK-7") as live:
            await _turn(live, "first")
            await live.call("set_model", "gpt-5.5-mini")
            await _turn(live, "second")
    first, second = server.responses()
    assert (first.body["model"], second.body["model"]) == ("gpt-5.5", "gpt-5.5-mini")
    developer = [part["text"] for item in _input_items(first.body, "message")
                 if item["role"] == "developer" for part in item["content"]]
    assert "Answer tersely. MARK-7" in developer


async def test_resume_in_a_new_process_carries_the_history(tmp_path: Path) -> None:
    server = FakeOpenAI([Text(text="Noted."), Text(text="Apricot.")])
    with trio.fail_after(TIMEOUT):
        async with _codex(tmp_path, server) as live:
            await _turn(live, "remember apricot")
            thread = live.translator.vendor_session_id
        async with _codex(tmp_path, server, resume=thread) as again:
            init = await again.wait_for(lambda e: isinstance(e, Init))
            assert isinstance(init, Init) and init.vendor_session_id == thread
            await _turn(again, "which word?")
    assert _user_texts(server.responses()[1].body)[-2:] == ["remember apricot", "which word?"]


async def test_mcp_server_gets_its_secret_and_the_tool_call_asks_first(tmp_path: Path) -> None:
    server = FakeOpenAI(mcp_replies("one"))
    with trio.fail_after(TIMEOUT):
        async with _codex(tmp_path, server, mcp_servers=[echo_server()]) as live:
            assert "t0ps3cret" not in " ".join(live.launch.argv)
            start = len(live.events)
            await live.call("prompt", "check the secret")
            ask = await live.wait_for(lambda e: isinstance(e, Permission), start)
            assert isinstance(ask, Permission) and ask.tool == "mcp__echo__secret_check"
            await live.call("decide", ask.permission_id, "allow")
            await live.wait_for(lambda e: isinstance(e, Result), start)
    (output,) = _input_items(server.responses()[2].body, "function_call_output")
    assert "token ok=True word=one" in json.dumps(output["output"])


async def test_codex_parses_the_mcp_overrides(tmp_path: Path) -> None:
    servers = [McpServer(name="files", command="srv", args=["a b"], env={"TOKEN": "t"}),
               McpServer(name="web", url="http://127.0.0.1:9/mcp",
                         headers={"Authorization": "Bearer x", "X-Key": "k"})]
    env = {**os.environ, "HOME": str(tmp_path), "CODEX_HOME": str(tmp_path)}
    with trio.fail_after(TIMEOUT):
        files = await trio.run_process([_binary(), *mcp_args(servers), "mcp", "get", "files", "--json"],
                                       capture_stdout=True, capture_stderr=True, env=env,
                                       stdin=subprocess.DEVNULL)
        web = await trio.run_process([_binary(), *mcp_args(servers), "mcp", "get", "web", "--json"],
                                     capture_stdout=True, capture_stderr=True, env=env,
                                     stdin=subprocess.DEVNULL)
    stdio = json.loads(files.stdout)["transport"]
    assert (stdio["command"], stdio["args"], stdio["env_vars"]) == ("srv", ["a b"], ["TOKEN"])
    http = json.loads(web.stdout)["transport"]
    assert http["url"] == "http://127.0.0.1:9/mcp"
    assert http["bearer_token_env_var"] == "CORRAL_MCP_WEB_BEARER_TOKEN"
    assert http["env_http_headers"] == {"X-Key": "CORRAL_MCP_WEB_HEADER_X_KEY"}
