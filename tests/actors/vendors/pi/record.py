"""Record pi RPC sessions against the fake model server, for the translator tests.

``python -m tests.actors.vendors.pi.record [SCENARIO ...]`` runs each scenario with the real CLI
(see ``live.py``) and writes ``recordings/<scenario>.ndjson``. ``message_update`` frames are
trimmed to their ``assistantMessageEvent`` without its ``partial`` (pi repeats the whole partial
message in every delta; the translator reads neither). Re-record after pinning a new pi version,
then re-run ``test_translate.py``: its assertions say what must still hold.
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
from protocol.models import Permissions
from tests.fakes.model_script import Turn, call, fail, hang, say
from tests.fakes.model_server import FakeModels

from .live import LivePi, make_request, pi_binary

HERE = Path(__file__).resolve().parent
RECORDINGS = HERE / "recordings"

Scenario = Callable[[FakeModels, LivePi], Awaitable[None]]


async def _turn(live: LivePi, text: str) -> Result:
    start = len(live.events)
    await live.call("prompt", text)
    result = await live.wait_for(lambda e: isinstance(e, Result), start)
    assert isinstance(result, Result)
    return result


async def text_turn(server: FakeModels, live: LivePi) -> None:
    server.add(Turn(text="Hello from the fake model.", thought="The user greets me.", chunk=6))
    await _turn(live, "say hello")


async def tool_turn(server: FakeModels, live: LivePi) -> None:
    server.add(call("bash", command="printf made > made.txt && echo created"),
               say("I created made.txt."), say("Second turn answer."))
    await _turn(live, "create made.txt")
    await _turn(live, "and now?")


async def permissions(server: FakeModels, live: LivePi) -> None:
    """Ask mode: a denied bash call, then an allowed write."""
    server.add(call("bash", command="touch denied.txt"), say("Understood, not run."),
               call("write", path="allowed.txt", content="yes"), say("Written."))
    for text, decision in (("touch denied.txt", "deny"), ("write allowed.txt", "allow")):
        start = len(live.events)
        await live.call("prompt", text)
        ask = await live.wait_for(lambda e: isinstance(e, Permission), start)
        assert isinstance(ask, Permission)
        await live.call("decide", ask.permission_id, decision)
        await live.wait_for(lambda e: isinstance(e, Result), start)


async def interrupt(server: FakeModels, live: LivePi) -> None:
    server.add(hang("Thinking about it"), say("After the interrupt."))
    start = len(live.events)
    await live.call("prompt", "take your time")
    await live.wait_for(lambda e: isinstance(e, Assistant), start)
    await server.wait_for(lambda: server.hanging == 1)
    await live.call("interrupt")
    await live.wait_for(lambda e: isinstance(e, Result), start)
    await _turn(live, "still there?")


async def interrupt_ask(server: FakeModels, live: LivePi) -> None:
    """Ask mode: an interrupt while the gate waits for an answer."""
    server.add(call("bash", command="touch never.txt"), say("Later."))
    start = len(live.events)
    await live.call("prompt", "touch never.txt")
    await live.wait_for(lambda e: isinstance(e, Permission), start)
    await live.call("interrupt")
    await live.wait_for(lambda e: isinstance(e, Result), start)
    await _turn(live, "again")


async def steer(server: FakeModels, live: LivePi) -> None:
    server.add(hang("Working"), say("With pears."))
    start = len(live.events)
    await live.call("prompt", "start something")
    await live.wait_for(lambda e: isinstance(e, Assistant), start)
    await server.wait_for(lambda: server.hanging == 1)
    await live.call("steer", "also mention pears")
    server.release()
    await live.wait_for(lambda e: isinstance(e, Result), start)


async def set_model(server: FakeModels, live: LivePi) -> None:
    server.add(say("Answer from the other model."))
    await live.call("set_model", "fake/fake-other")
    await _turn(live, "which model?")


async def errors(server: FakeModels, live: LivePi) -> None:
    """A 401 (not retried), then three 500s (pi retries twice, then gives up)."""
    server.add(fail(401))
    await _turn(live, "fail with 401")
    server.add(fail(500), fail(500), fail(500))
    await _turn(live, "fail with 500")
    server.add(fail(500), say("Recovered."))
    await _turn(live, "fail once")


async def resume_first(server: FakeModels, live: LivePi) -> None:
    server.add(say("Remember the word apricot."))
    await _turn(live, "remember apricot")


SCENARIOS: dict[str, Scenario] = {
    "text_turn": text_turn, "tool_turn": tool_turn, "permissions": permissions,
    "interrupt": interrupt, "interrupt_ask": interrupt_ask, "steer": steer,
    "set_model": set_model, "errors": errors,
}
FIELDS: dict[str, dict[str, Any]] = {"permissions": {"permissions": Permissions(mode="ask")},
                                     "interrupt_ask": {"permissions": Permissions(mode="ask")}}


def _trim(line: dict[str, Any]) -> dict[str, Any]:
    frame = line.get("frame")
    if line["dir"] == "recv" and isinstance(frame, dict) and frame.get("type") == "message_update":
        event = {k: v for k, v in frame["assistantMessageEvent"].items() if k != "partial"}
        return {"dir": "recv", "frame": {"type": "message_update", "assistantMessageEvent": event}}
    return line


async def _record(name: str, scenario: Scenario, tmp: Path, **fields: Any) -> LivePi:
    binary = pi_binary()
    if binary is None:
        raise SystemExit("pi is not installed")
    lines: list[dict[str, Any]] = []
    server = FakeModels()
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            live = LivePi(make_request(tmp, port, binary, **fields),
                          stderr_path=tmp / "stderr.txt", record=lambda l: lines.append(_trim(l)))
            try:
                await nursery.start(live.run)
                ready = await live.wait_for(lambda e: isinstance(e, Init))
                assert isinstance(ready, Init)
                await scenario(server, live)
            except BaseException:
                print((tmp / "stderr.txt").read_text(errors="replace")[-4000:], file=sys.stderr)
                raise
            finally:
                await live.close()
            nursery.cancel_scope.cancel()
    (tmp / "requests.json").write_text(json.dumps([r.body for r in server.model_requests()]))
    with open(RECORDINGS / f"{name}.ndjson", "w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line) + "\n")
    print(f"{name}: {len(lines)} lines, {len(server.model_requests())} model calls")
    return live


async def main(names: list[str]) -> None:
    RECORDINGS.mkdir(exist_ok=True)
    for name in names or [*SCENARIOS, "resume"]:
        tmp = Path(tempfile.mkdtemp(prefix=f"pi-{name}-"))
        try:
            if name == "resume":
                first = await _record("resume_first", resume_first, tmp)

                async def second(server: FakeModels, live: LivePi) -> None:
                    server.add(say("The word was apricot."))
                    await _turn(live, "which word?")

                await _record("resume", second, tmp, resume=first.translator.vendor_session_id)
            else:
                await _record(name, SCENARIOS[name], tmp, **FIELDS.get(name, {}))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1:])
