"""Record Codex app-server sessions against the fake OpenAI server, for the translator tests.

``python -m tests.actors.vendors.codex.record [SCENARIO ...]`` runs each scenario with the real
CLI (see ``live.py``) and writes ``recordings/<scenario>.ndjson``. Re-record after pinning a new
Codex version, then re-run ``test_translate.py``: its assertions say what must still hold.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from protocol.events import Assistant, Init, Permission, Result
from protocol.models import McpServer
from tests.fakes.openai_server import (
    CustomCall, Exec, FakeOpenAI, FunctionCall, HttpError, RawItem, Stall, Text,
)

from .live import LiveCodex, codex_binary, make_request, stderr_tail

HERE = Path(__file__).resolve().parent
RECORDINGS = HERE / "recordings"

Scenario = Callable[[FakeOpenAI, LiveCodex], Awaitable[None]]


async def _turn(live: LiveCodex, text: str) -> Result:
    start = len(live.events)
    await live.call("prompt", text)
    result = await live.wait_for(lambda e: isinstance(e, Result), start)
    assert isinstance(result, Result)
    return result


async def text_turn(server: FakeOpenAI, live: LiveCodex) -> None:
    server.add(Text(text="Hello from the fake model.", reasoning="The user greets me.", chunk=6))
    await _turn(live, "say hello")


async def exec_turn(server: FakeOpenAI, live: LiveCodex) -> None:
    server.add(Exec(cmd="printf made > made.txt && echo created", text="Creating the file."),
               Text(text="I created made.txt."))
    await _turn(live, "create made.txt")
    server.add(Text(text="Second turn answer."))
    await _turn(live, "and now?")


async def approval_deny(server: FakeOpenAI, live: LiveCodex) -> None:
    server.add(Exec(cmd="touch denied.txt", sandbox_permissions="require_escalated",
                    justification="Create denied.txt outside the sandbox?"),
               Text(text="Understood, I did not run it."))
    start = len(live.events)
    await live.call("prompt", "touch denied.txt")
    ask = await live.wait_for(lambda e: isinstance(e, Permission), start)
    assert isinstance(ask, Permission)
    await live.call("decide", ask.permission_id, "deny")
    await live.wait_for(lambda e: isinstance(e, Result), start)


async def approval_allow(server: FakeOpenAI, live: LiveCodex) -> None:
    server.add(Exec(cmd="touch allowed.txt", sandbox_permissions="require_escalated",
                    justification="Create allowed.txt?"),
               Text(text="Done."))
    start = len(live.events)
    await live.call("prompt", "touch allowed.txt")
    ask = await live.wait_for(lambda e: isinstance(e, Permission), start)
    assert isinstance(ask, Permission)
    await live.call("decide", ask.permission_id, "allow_always")
    await live.wait_for(lambda e: isinstance(e, Result), start)


async def apply_patch(server: FakeOpenAI, live: LiveCodex) -> None:
    patch = "*** Begin Patch\n*** Add File: notes.txt\n+first line\n*** End Patch\n"
    server.add(CustomCall(name="apply_patch", input=patch), Text(text="Wrote notes.txt."))
    await _turn(live, "write notes.txt")


async def interrupt(server: FakeOpenAI, live: LiveCodex) -> None:
    server.add(Stall(text="Thinking about it"))
    start = len(live.events)
    await live.call("prompt", "take your time")
    await live.wait_for(lambda e: isinstance(e, Assistant), start)
    await server.wait_for(lambda: server.stalled > 0)
    await live.call("interrupt")
    await live.wait_for(lambda e: isinstance(e, Result), start)


async def steer(server: FakeOpenAI, live: LiveCodex) -> None:
    server.add(Stall(text="Working"), Text(text="Steered answer."))
    start = len(live.events)
    await live.call("prompt", "start something")
    await live.wait_for(lambda e: isinstance(e, Assistant), start)
    await server.wait_for(lambda: server.stalled > 0)
    await live.call("steer", "also mention pears")
    await live.wait_until(lambda: not live.translator._calls)
    server.release_stalls()
    await live.wait_for(lambda e: isinstance(e, Result), start)


async def set_model(server: FakeOpenAI, live: LiveCodex) -> None:
    server.add(Text(text="Answer from the other model."))
    await live.call("set_model", "gpt-5.5-mini")
    await _turn(live, "which model?")


async def errors(server: FakeOpenAI, live: LiveCodex) -> None:
    for status in (401, 429, 500):
        server.add(HttpError(status=status))
        await _turn(live, f"fail with {status}")
    server.add(HttpError(status=429, code="insufficient_quota", type="insufficient_quota",
                         message="You exceeded your current quota, please check your plan."))
    await _turn(live, "fail with quota")


def echo_server() -> McpServer:
    """The stdio MCP server of ``mcp_echo.py``, given its secret through ``env``."""
    return McpServer(name="echo", command=sys.executable, args=[str(HERE / "mcp_echo.py")],
                     env={"ECHO_TOKEN": "t0ps3cret"})


def mcp_replies(*words: str) -> list[Any]:
    """Codex defers MCP tools: the model searches for them, then calls them in their namespace."""
    search = RawItem(item={"type": "tool_search_call", "id": "tsc_1", "call_id": "search_1",
                           "status": "completed", "execution": "client",
                           "arguments": {"query": "secret check"}})
    calls = [FunctionCall(name="secret_check", namespace="mcp__echo", arguments={"word": word})
             for word in words]
    return [search, *calls, Text(text="Checked.")]


async def mcp(server: FakeOpenAI, live: LiveCodex) -> None:
    """Two calls of one MCP tool: the first is allowed for the session, the second is not asked."""
    server.add(*mcp_replies("one", "two"))
    start = len(live.events)
    await live.call("prompt", "check the secret twice")
    ask = await live.wait_for(lambda e: isinstance(e, Permission), start)
    assert isinstance(ask, Permission)
    await live.call("decide", ask.permission_id, "allow_always")
    await live.wait_for(lambda e: isinstance(e, Result), start)


async def resume(server: FakeOpenAI, live: LiveCodex) -> None:
    """First process: one turn (``resume_first``); the second process is ``resume`` itself."""
    server.add(Text(text="Remember the word apricot."))
    await _turn(live, "remember apricot")


SCENARIOS: dict[str, Scenario] = {
    "text_turn": text_turn, "exec_turn": exec_turn, "approval_deny": approval_deny,
    "approval_allow": approval_allow, "apply_patch": apply_patch, "interrupt": interrupt,
    "steer": steer, "set_model": set_model, "errors": errors, "mcp": mcp,
}
FIELDS: dict[str, dict[str, Any]] = {"mcp": {"mcp_servers": [echo_server()]}}


async def _record(name: str, scenario: Scenario, tmp: Path, **fields: Any) -> LiveCodex:
    binary = codex_binary()
    if binary is None:
        raise SystemExit("codex is not installed")
    lines: list[dict[str, Any]] = []
    server = FakeOpenAI()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            live = LiveCodex(make_request(tmp, port, binary, **fields),
                             stderr_path=tmp / "stderr.txt", record=lines.append)
            try:
                await nursery.start(live.run)
                ready = await live.wait_for(lambda e: isinstance(e, Init))
                assert isinstance(ready, Init)
                await scenario(server, live)
            except BaseException:
                print(stderr_tail(tmp / "stderr.txt"), file=sys.stderr)
                raise
            finally:
                await live.close()
            nursery.cancel_scope.cancel()
    (tmp / "requests.json").write_text(json.dumps([r.body for r in server.responses()]))
    with open(RECORDINGS / f"{name}.ndjson", "w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, sort_keys=False) + "\n")
    print(f"{name}: {len(lines)} lines, {len(server.responses())} model calls")
    return live


async def main(names: list[str]) -> None:
    RECORDINGS.mkdir(exist_ok=True)
    for name in names or [*SCENARIOS, "resume"]:
        tmp = Path(tempfile.mkdtemp(prefix=f"codex-{name}-"))
        try:
            if name == "resume":
                first = await _record("resume_first", resume, tmp)
                thread = first.translator.vendor_session_id
                server_text = Text(text="The word was apricot.")

                async def second(server: FakeOpenAI, live: LiveCodex) -> None:
                    server.add(server_text)
                    await _turn(live, "which word?")

                await _record("resume", second, tmp, resume=thread)
            else:
                await _record(name, SCENARIOS[name], tmp, **FIELDS.get(name, {}))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1:])
