"""Record the Claude translator's recordings from the real CLI against the fake Anthropic server.

    python -m tests.actors.vendors.claude.record [--out DIR] [SCENARIO ...]

Each scenario drives one CLI process (``resume`` drives two and writes ``resume_first`` too)
with ``LiveClaude`` and writes ``DIR/<scenario>.ndjson`` (format: ``live.py``). The replay tests
in ``test_translate.py`` feed the recorded CLI lines to a fresh translator, issue the recorded
calls at the same points, and compare what it sends with the recorded bytes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from protocol.events import Assistant, Event, Permission, Result
from protocol.models import McpServer, Permissions
from tests.actors.vendors.claude.live import LiveClaude, make_request, meta
from tests.fakes.claude_offline import claude_binary
from tests.fakes.anthropic_server import (
    ErrorReply,
    FakeAnthropic,
    Reply,
    Scripted,
    Text,
    Thinking,
    bash,
    text,
)

HERE = Path(__file__).parent / "recordings"
Steps = Callable[[LiveClaude, FakeAnthropic], Awaitable[None]]


def _kind(kind: type) -> Callable[[Event], bool]:
    return lambda event: isinstance(event, kind)


async def _turn(live: LiveClaude, prompt: str) -> Event:
    start = len(live.events)
    await live.call("prompt", text=prompt)
    return await live.wait_for(_kind(Result), start)


async def _ask(live: LiveClaude, prompt: str) -> tuple[Permission, int]:
    start = len(live.events)
    await live.call("prompt", text=prompt)
    ask = await live.wait_for(_kind(Permission), start)
    assert isinstance(ask, Permission)
    return ask, start


async def text_turn(live: LiveClaude, server: FakeAnthropic) -> None:
    await _turn(live, "think, then say hello")
    await _turn(live, "again, briefly")


async def bash_allow(live: LiveClaude, server: FakeAnthropic) -> None:
    ask, start = await _ask(live, "create made.txt")
    await live.call("decide", permission_id=ask.permission_id, decision="allow")
    await live.wait_for(_kind(Result), start)


async def bash_deny(live: LiveClaude, server: FakeAnthropic) -> None:
    ask, start = await _ask(live, "delete everything")
    await live.call("decide", permission_id=ask.permission_id, decision="deny")
    await live.wait_for(_kind(Result), start)


async def allow_always(live: LiveClaude, server: FakeAnthropic) -> None:
    ask, start = await _ask(live, "make sub")
    await live.call("decide", permission_id=ask.permission_id, decision="allow_always")
    await live.wait_for(_kind(Result), start)
    await _turn(live, "make sub again")  # not asked again


async def interrupt_stream(live: LiveClaude, server: FakeAnthropic) -> None:
    start = len(live.events)
    await live.call("prompt", text="write a long story")
    await live.wait_for(_kind(Assistant), start)
    await live.call("interrupt")
    await live.wait_for(_kind(Result), start)
    await _turn(live, "just say done")


async def interrupt_permission(live: LiveClaude, server: FakeAnthropic) -> None:
    ask, start = await _ask(live, "create late.txt")
    await live.call("interrupt")
    await live.wait_for(_kind(Result), start)
    await live.call("decide", permission_id=ask.permission_id, decision="allow")  # withdrawn: sends nothing
    await _turn(live, "just say done")


async def steer_tool(live: LiveClaude, server: FakeAnthropic) -> None:
    ask, start = await _ask(live, "create steer.txt")
    await live.call("steer", text="also say which file you made")
    await live.call("decide", permission_id=ask.permission_id, decision="allow")
    await live.wait_for(_kind(Result), start)


async def steer_followup(live: LiveClaude, server: FakeAnthropic) -> None:
    start = len(live.events)
    await live.call("prompt", text="count slowly")
    await live.wait_for(_kind(Assistant), start)
    await live.call("steer", text="and then say bye")
    await live.wait_for(_kind(Result), start)


async def api_errors(live: LiveClaude, server: FakeAnthropic) -> None:
    for prompt in ("rate limited", "bad key", "overloaded", "no credit", "finally"):
        await _turn(live, prompt)


async def set_model(live: LiveClaude, server: FakeAnthropic) -> None:
    await _turn(live, "hello")
    await live.call("set_model", model="claude-sonnet-4-5")
    await _turn(live, "hello again")


async def resume_first(live: LiveClaude, server: FakeAnthropic) -> None:
    await _turn(live, "remember the word apple")


async def resume(live: LiveClaude, server: FakeAnthropic) -> None:
    await _turn(live, "which word?")


async def mcp_auto(live: LiveClaude, server: FakeAnthropic) -> None:
    await _turn(live, "create auto.txt without asking")


_SLOW = Reply(blocks=[Text(text="one, two, three, four, five", chunk=5)], delay=0.05)
SCENARIOS: dict[str, tuple[list[Scripted], dict[str, Any], Steps]] = {
    "text_turn": ([Reply(blocks=[Thinking(text="The user wants a greeting."), Text(text="Hello there, friend!")]),
                   text("Again: hello.")], {}, text_turn),
    "bash_allow": ([bash("echo made > made.txt"), text("Created made.txt.")], {}, bash_allow),
    "bash_deny": ([bash("rm -rf ./*"), text("I will not delete anything.")], {}, bash_deny),
    "allow_always": ([bash("mkdir -p sub"), text("Made sub."), bash("mkdir -p sub"), text("Made it again.")], {},
                     allow_always),
    "interrupt_stream": ([Reply(blocks=[Text(text="Once upon a time, far away")], hang=True), text("done")], {},
                         interrupt_stream),
    "interrupt_permission": ([bash("echo late > late.txt"), text("done")], {}, interrupt_permission),
    "steer_tool": ([bash("echo s > steer.txt"), text("Made steer.txt, as you asked.")], {}, steer_tool),
    "steer_followup": ([_SLOW, text("Bye!")], {}, steer_followup),
    "api_errors": ([ErrorReply(status=429), ErrorReply(status=401), ErrorReply(status=529),
                    ErrorReply(status=400, message="Your credit balance is too low to access the Anthropic API."),
                    text("Recovered.")], {"env": {"CLAUDE_CODE_MAX_RETRIES": "0"}}, api_errors),
    "set_model": ([text("Hi from the default model."), text("Hi from sonnet.")], {}, set_model),
    "resume_first": ([text("Remembered: apple.")], {}, resume_first),
    "resume": ([text("The word was apple.")], {}, resume),
    "mcp_auto": ([bash("echo auto > auto.txt"), text("Created auto.txt.")],
                 {"permissions": Permissions(mode="auto"), "model": "claude-sonnet-4-5",
                  "instructions": "Always answer in English.",
                  "mcp_servers": [McpServer(name="nowhere", command="/nonexistent/mcp-server", args=["--stdio"])]},
                 mcp_auto),
}


async def record(name: str, out: Path, tmp: Path, binary: str, version: str,
                 resume_id: str | None = None) -> str | None:
    """Run one scenario and write its recording; returns the vendor session id."""
    script, fields, steps = SCENARIOS[name]
    fields = dict(fields)
    uuid_base = 0
    if resume_id is not None:
        fields["resume"] = resume_id
        uuid_base = 1
    server = FakeAnthropic(script)
    lines: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        request = make_request(tmp, server.port, binary, **fields)
        lines.append(json.dumps(meta(request, version, name, uuid_base)))
        live = LiveClaude(request, stderr_path=tmp / f"{name}.stderr",
                          record=lambda entry: lines.append(json.dumps(entry, ensure_ascii=False)),
                          uuid_base=uuid_base)
        with trio.fail_after(60):
            await nursery.start(live.run)
            await live.wait_ready()
            await steps(live, server)
            await live.close()
        nursery.cancel_scope.cancel()
    (out / f"{name}.ndjson").write_text("\n".join(lines) + "\n")
    return live.translator.vendor_session_id


async def main(out: Path, names: list[str]) -> None:
    binary = claude_binary()
    if binary is None:
        raise SystemExit("claude is not installed")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if name == "resume_first":
                continue
            if name == "resume":
                session = await record("resume_first", out, Path(tmp), binary, version)
                await record("resume", out, Path(tmp), binary, version, resume_id=session)
            else:
                (Path(tmp) / name).mkdir()
                await record(name, out, Path(tmp) / name, binary, version)
            print("recorded", name)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Record Claude Code frames against the fake server.")
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    args = parser.parse_args()
    trio.run(main, args.out, args.scenarios)
