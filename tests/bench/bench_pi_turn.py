"""What corral adds to a pi turn: the same scripted turns driven directly and through a daemon.

Run: ``python -m tests.bench.bench_pi_turn [--turns N] [--warmup W]``. Not collected by pytest.
Needs pi (``tests.fakes.pi_offline``); everything stays on 127.0.0.1.

Two ``pi --mode rpc`` children run against one fake model server (``tests.fakes.model_server``,
Chat Completions) in a process of its own, scripted up front in the order the turns ask:

* **direct**: pi spawned from our launch builder and driven by the translator in this process
  (``LivePi``, as in the driver's live tests): the floor any driver pays (it includes the
  translator's ``get_state`` barrier at the end of each run);
* **corral**: a ``corral daemon`` running a ``pi`` session, driven over the websocket.

Each turn is timed from sending the prompt to its ``result``; a **text** turn (one model call)
and a **tool** turn (a ``bash`` call, then an answer) alternate between the paths as in
``bench_codex_turn``; the report is ``tests.bench.turns.report``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import trio

from protocol.events import Init, Result
from tests.actors.vendors.pi.live import LivePi, make_request
from tests.bench.turns import read_port_line, report, run
from tests.e2e.daemonproc import RawClient, raw_client, start_daemon, stop_daemon
from tests.fakes.model_script import Step, call, say
from tests.fakes.pi_offline import INSTALL_HINT, MODEL, offline_env, pi_binary, write_home

SHAPES: dict[str, Callable[[int], list[Step]]] = {
    "text": lambda n: [say(f"Answer number {n}, streamed in a few small chunks.")],
    "tool": lambda n: [call("bash", command=f"echo {n} > out-{n}.txt && echo wrote"),
                       say("Wrote it.")],
}
Turn = Callable[[str], Awaitable[None]]


async def direct_turn(live: LivePi) -> Turn:
    async def turn(text: str) -> None:
        start = len(live.events)
        await live.call("prompt", text)
        result = await live.wait_for(lambda e: isinstance(e, Result), start)
        if not isinstance(result, Result) or result.is_error:
            raise RuntimeError(f"direct turn failed: {result}")
    return turn


async def corral_turn(client: RawClient, sid: str) -> Turn:
    async def turn(text: str) -> None:
        await client.ok("session.prompt", session_id=sid, text=text)
        frames = await client.events_until(
            sid, lambda f: f.get("type") == "event" and f["event"]["type"] == "result", 120)
        if frames[-1]["event"]["is_error"]:
            raise RuntimeError(f"corral turn failed: {frames[-1]['event']}")
    return turn


async def measure(turns: dict[str, Turn], shape: str, count: int,
                  warmup: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in turns}
    for n in range(warmup + count):
        for name, turn in turns.items():
            started = time.perf_counter()
            await turn(f"{shape} turn {n}")
            if n >= warmup:
                times[name].append((time.perf_counter() - started) * 1000)
    return times


async def main(count: int, warmup: int) -> None:
    binary = pi_binary()
    if binary is None:
        sys.exit(f"pi is not installed ({INSTALL_HINT})")
    steps = [step for shape in SHAPES for n in range(warmup + count) for _ in range(2)
             for step in SHAPES[shape](n)]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "steps.json").write_bytes(msgspec.json.encode(steps))
        direct_dir, corral_dir = tmp / "direct", tmp / "corral"
        async with trio.open_nursery() as nursery:
            process = await nursery.start(partial(
                trio.run_process, [sys.executable, "-m", "tests.fakes.model_server", "--script",
                                   str(tmp / "steps.json")],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False))
            port = int(await read_port_line(process, "model"))
            direct_dir.mkdir()
            live = LivePi(make_request(direct_dir, port, binary), stderr_path=direct_dir / "err")
            await nursery.start(live.run)
            await live.wait_for(lambda e: isinstance(e, Init))
            daemon = await start_daemon(corral_dir / "state")
            try:
                async with raw_client(daemon) as client:
                    sid = await _create(client, corral_dir, port, binary)
                    turns = {"direct": await direct_turn(live),
                             "corral": await corral_turn(client, sid)}
                    print(f"pi {binary}; {count} counted turns per shape after {warmup} warm-up")
                    for shape in SHAPES:
                        report(shape, await measure(turns, shape, count, warmup))
                    await client.ok("session.close", session_id=sid)
            finally:
                await stop_daemon(daemon)
                await live.close()
            nursery.cancel_scope.cancel()


async def _create(client: RawClient, root: Path, port: int, binary: str) -> str:
    (root / "work").mkdir(parents=True, exist_ok=True)
    write_home(root / "pi_home", port)
    params: dict[str, Any] = {
        "harness": "pi", "cwd": str(root / "work"), "model": MODEL,
        "options": {"binary": binary, "home": str(root / "pi_home")},
        "env": offline_env(root), "permissions": {"mode": "auto"},
    }
    sid = str((await client.ok("session.create", **params))["session"]["id"])
    await client.ok("session.subscribe", session_id=sid)
    await client.events_until(sid, lambda f: f.get("type") == "event"
                              and f["event"]["type"] == "init", 60)
    return sid


if __name__ == "__main__":
    run(main, __doc__)
