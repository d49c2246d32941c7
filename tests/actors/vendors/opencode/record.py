"""Record OpenCode sessions (on a real shared ``opencode serve``) for the translator tests.

``python -m tests.actors.vendors.opencode.record [SCENARIO ...]`` runs each scenario against the
fake model server and writes ``recordings/<scenario>.ndjson``. Events of kinds the translator
ignores are left out (OpenCode's stream carries many: plugin, catalogue, diff, heartbeat, …).
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

from actors.vendors.opencode import OpenCodeServers
from actors.vendors.opencode.translate import _EVENTS
from protocol.events import Assistant, Init, Permission, Result
from protocol.models import Permissions
from supervisor.ledger.store import Ledger
from tests.fakes.model_script import Turn, call, fail, hang, say
from tests.fakes.model_server import FakeModels
from tests.fakes.opencode_offline import opencode_binary, title_aside

from .live import LiveOpenCode, make_request

RECORDINGS = Path(__file__).resolve().parent / "recordings"
Scenario = Callable[[FakeModels, LiveOpenCode], Awaitable[None]]


async def turn(live: LiveOpenCode, text: str) -> Result:
    start = len(live.events)
    await live.call("prompt", text)
    result = await live.wait_for(lambda e: isinstance(e, Result), start)
    assert isinstance(result, Result)
    return result


async def text_turn(server: FakeModels, live: LiveOpenCode) -> None:
    server.add(Turn(text="Hello from the fake model.", thought="The user greets me.", chunk=6))
    await turn(live, "say hello")


async def tool_turn(server: FakeModels, live: LiveOpenCode) -> None:
    server.add(call("bash", command="printf made > made.txt && echo created", description="make"),
               say("I created made.txt."), say("Second turn answer."))
    await turn(live, "create made.txt")
    await turn(live, "and now?")


async def permissions(server: FakeModels, live: LiveOpenCode) -> None:
    # A rejected permission ends OpenCode's turn: the model is not called again after it.
    server.add(call("bash", command="touch denied.txt", description="deny me"),
               call("write", filePath="allowed.txt", content="yes"), say("Written."))
    for text, decision in (("touch denied.txt", "deny"), ("write allowed.txt", "allow")):
        start = len(live.events)
        await live.call("prompt", text)
        ask = await live.wait_for(lambda e: isinstance(e, Permission), start)
        assert isinstance(ask, Permission)
        await live.call("decide", ask.permission_id, decision)
        await live.wait_for(lambda e: isinstance(e, Result), start)


async def interrupt(server: FakeModels, live: LiveOpenCode) -> None:
    server.add(hang("Thinking about it"), say("After the interrupt."))
    start = len(live.events)
    await live.call("prompt", "take your time")
    await live.wait_for(lambda e: isinstance(e, Assistant), start)
    await server.wait_for(lambda: server.hanging == 1)
    await live.call("interrupt")
    await live.wait_for(lambda e: isinstance(e, Result), start)
    await turn(live, "still there?")


async def errors(server: FakeModels, live: LiveOpenCode) -> None:
    server.add(fail(401))
    await turn(live, "fail with 401")
    server.add(say("Fine again."))
    await turn(live, "and now?")


async def set_model(server: FakeModels, live: LiveOpenCode) -> None:
    server.add(say("Answer from the other model."))
    await live.call("set_model", "fake/fake-other")
    await turn(live, "which model?")


SCENARIOS: dict[str, Scenario] = {
    "text_turn": text_turn, "tool_turn": tool_turn, "permissions": permissions,
    "interrupt": interrupt, "errors": errors, "set_model": set_model,
}
FIELDS: dict[str, dict[str, Any]] = {"permissions": {"permissions": Permissions(mode="ask")}}


def kept(line: dict[str, Any]) -> bool:
    frame = line.get("frame")
    return not (line["dir"] == "recv" and isinstance(frame, dict)
                and frame.get("type") not in (*_EVENTS, "corral.answer"))


async def record(name: str, scenarios: list[tuple[Scenario, dict[str, Any]]], tmp: Path) -> None:
    binary = opencode_binary()
    if binary is None:
        raise SystemExit("opencode is not installed")
    lines: list[dict[str, Any]] = []
    server = FakeModels(aside=title_aside)
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            servers = OpenCodeServers(Ledger(tmp / "state"))
            await nursery.start(servers.run)
            resume: str | None = None
            for scenario, fields in scenarios:
                if resume is not None:
                    fields = {**fields, "resume": resume}
                live = LiveOpenCode(servers, make_request(tmp, port, binary, **fields),
                                    record=lambda l: lines.append(l) if kept(l) else None)
                async with trio.open_nursery() as inner:
                    await inner.start(live.run)
                    await live.wait_for(lambda e: isinstance(e, Init))
                    await scenario(server, live)
                    inner.cancel_scope.cancel()
                resume = live.translator.vendor_session_id
            nursery.cancel_scope.cancel()
    with open(RECORDINGS / f"{name}.ndjson", "w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line) + "\n")
    print(f"{name}: {len(lines)} lines, {len(server.model_requests())} model calls")


async def main(names: list[str]) -> None:
    RECORDINGS.mkdir(exist_ok=True)
    for name in names or [*SCENARIOS, "resume"]:
        tmp = Path(tempfile.mkdtemp(prefix=f"opencode-{name}-"))
        try:
            if name == "resume":
                async def first(server: FakeModels, live: LiveOpenCode) -> None:
                    server.add(say("Noted: apricot."))
                    await turn(live, "remember apricot")

                async def second(server: FakeModels, live: LiveOpenCode) -> None:
                    server.add(say("Apricot."))
                    await turn(live, "which word?")

                await record("resume", [(first, {}), (second, {})], tmp)
            else:
                await record(name, [(SCENARIOS[name], FIELDS.get(name, {}))], tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1:])
