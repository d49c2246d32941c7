"""What corral adds to an OpenCode turn: the same scripted turns driven directly and through a daemon.

Run: ``python -m tests.bench.bench_opencode_turn [--turns N] [--warmup W] [--baseline DIR]``.
Not collected by pytest. Needs OpenCode (``tests.fakes.opencode_offline``); everything stays on
127.0.0.1.

Two ``opencode serve`` processes run against one fake model server (Chat Completions, in a
process of its own: ``tests.bench.opencode_models``, which answers OpenCode's title calls
beside the script), scripted up front in the order the turns ask:

* **direct**: a server started by our ``opencode`` supervisor and server actor from our launch
  builder (``OpenCodeServers``), one session attached through our HTTP/SSE transport and driven
  by the translator in this process (``LiveOpenCode``, as in the driver's live tests): the
  floor any driver pays;
* **corral**: a ``corral daemon`` running an ``opencode`` session, driven over the websocket.

Each turn is timed from sending the prompt to its ``result``; a **text** turn (one model call)
and a **tool** turn (a ``bash`` call, then an answer) alternate between the paths as in
``bench_codex_turn``. The fake's request log must show exactly the scripted number of model
calls and one title call per session. Rounds, ``--baseline DIR`` and the report:
``tests.bench.turns``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import trio

from actors.vendors.opencode import OpenCodeServers
from protocol.events import Init
from supervisor.ledger.store import Ledger
from tests.actors.vendors.opencode.live import LiveOpenCode, make_request
from tests.bench.turns import Bench, frame_log, Turn, corral_turn, direct_turn, daemons, measure, read_port_line, report, run
from tests.e2e.daemonproc import RawClient, raw_client
from tests.fakes.model_script import Step, call, say
from tests.fakes.opencode_offline import (
    INSTALL_HINT, MODEL, offline_env, opencode_binary, provider_config,
)

SHAPES: dict[str, Callable[[int], list[Step]]] = {
    "text": lambda n: [say(f"Answer number {n}, streamed in a few small chunks.")],
    "tool": lambda n: [call("bash", command=f"echo {n} > out-{n}.txt && echo wrote",
                            description=f"write out-{n}.txt"),
                       say("Wrote it.")],
}


def script(bench: Bench) -> list[Step]:
    """Every model step, in the order ``measure`` asks for them."""
    return [step for shape in SHAPES for n in range(bench.warmup + bench.count)
            for _ in range(bench.paths) for step in SHAPES[shape](n)]




async def serve_script(steps: list[Step], directory: Path, nursery: trio.Nursery) -> int:
    """Start ``python -m tests.bench.opencode_models`` on ``steps``; returns its port."""
    (directory / "steps.json").write_bytes(msgspec.json.encode(steps))
    process = await nursery.start(partial(
        trio.run_process, [sys.executable, "-m", "tests.bench.opencode_models", "--script",
                           str(directory / "steps.json"), "--log", str(directory / "log.ndjson")],
        stdout=subprocess.PIPE, check=False))
    return int(await read_port_line(process, "model"))


async def main(bench: Bench) -> None:
    binary = opencode_binary()
    if binary is None:
        sys.exit(f"opencode is not installed ({INSTALL_HINT})")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        direct_dir = tmp / "direct"
        direct_dir.mkdir()
        steps = script(bench)
        async with trio.open_nursery() as nursery:
            port = await serve_script(steps, tmp, nursery)
            async with AsyncExitStack() as stack:
                servers = OpenCodeServers(Ledger(direct_dir / "state"))
                await nursery.start(servers.run)
                live = LiveOpenCode(servers, make_request(direct_dir, port, binary))
                await nursery.start(live.run)
                await live.wait_for(lambda e: isinstance(e, Init))
                turns: dict[str, Turn] = {"direct": direct_turn(live)}
                for name, daemon in (await stack.enter_async_context(daemons(bench, tmp))).items():
                    client = await stack.enter_async_context(raw_client(daemon))
                    turns[name] = corral_turn(client, await _create(client, tmp / name, port, binary))
                print(f"opencode {binary}; {bench.count} counted turns per shape after {bench.warmup} warm-up")
                for shape in SHAPES:
                    report(shape, await measure(turns, shape, bench.count, bench.warmup))
            nursery.cancel_scope.cancel()
        _check_log(tmp / "log.ndjson", len(steps), bench.paths)


def _check_log(log: Path, scripted: int, sessions: int) -> None:
    """Every scripted step was asked for, and each session made its one title call beside."""
    records = [msgspec.json.decode(line) for line in log.read_bytes().splitlines()]
    calls = sum(1 for r in records if not r["aside"] and r["path"].endswith("/chat/completions"))
    titles = sum(1 for r in records if r["aside"])
    if (calls, titles) != (scripted, sessions):
        raise RuntimeError(f"{calls} model calls and {titles} title calls; "
                           f"{scripted} and {sessions} expected")


async def _create(client: RawClient, root: Path, port: int, binary: str) -> str:
    """A subscribed OpenCode session set up like ``make_request`` sets up the direct one."""
    (root / "work").mkdir(parents=True, exist_ok=True)
    params: dict[str, Any] = {
        "harness": "opencode", "cwd": str(root / "work"), "model": MODEL,
        "options": {**frame_log(root), "binary": binary, "config": provider_config(port)},
        "env": offline_env(root), "permissions": {"mode": "auto"},
    }
    sid = str((await client.ok("session.create", **params))["session"]["id"])
    await client.ok("session.subscribe", session_id=sid)
    await client.events_until(sid, lambda f: f.get("type") == "event"
                              and f["event"]["type"] == "init", 90)
    return sid


if __name__ == "__main__":
    run(main, __doc__)
