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
from collections.abc import Callable
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import trio

from protocol.events import Init
from tests.actors.vendors.pi.live import LivePi, make_request
from tests.bench.turns import Bench, frame_log, Turn, corral_turn, direct_turn, daemons, measure, read_port_line, report, run
from tests.e2e.daemonproc import RawClient, raw_client
from tests.fakes.model_script import Step, call, say
from tests.fakes.pi_offline import INSTALL_HINT, MODEL, offline_env, pi_binary, write_home

SHAPES: dict[str, Callable[[int], list[Step]]] = {
    "text": lambda n: [say(f"Answer number {n}, streamed in a few small chunks.")],
    "tool": lambda n: [call("bash", command=f"echo {n} > out-{n}.txt && echo wrote"),
                       say("Wrote it.")],
}




async def main(bench: Bench) -> None:
    binary = pi_binary()
    if binary is None:
        sys.exit(f"pi is not installed ({INSTALL_HINT})")
    steps = [step for shape in SHAPES for n in range(bench.warmup + bench.count)
             for _ in range(bench.paths) for step in SHAPES[shape](n)]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "steps.json").write_bytes(msgspec.json.encode(steps))
        direct_dir = tmp / "direct"
        async with trio.open_nursery() as nursery:
            process = await nursery.start(partial(
                trio.run_process, [sys.executable, "-m", "tests.fakes.model_server", "--script",
                                   str(tmp / "steps.json")],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False))
            port = int(await read_port_line(process, "model"))
            direct_dir.mkdir()
            async with AsyncExitStack() as stack:
                live = LivePi(make_request(direct_dir, port, binary), stderr_path=direct_dir / "err")
                await nursery.start(live.run)
                stack.push_async_callback(live.close)
                await live.wait_for(lambda e: isinstance(e, Init))
                turns: dict[str, Turn] = {"direct": direct_turn(live)}
                for name, daemon in (await stack.enter_async_context(daemons(bench, tmp))).items():
                    client = await stack.enter_async_context(raw_client(daemon))
                    turns[name] = corral_turn(client, await _create(client, tmp / name, port, binary))
                print(f"pi {binary}; {bench.count} counted turns per shape after {bench.warmup} warm-up")
                for shape in SHAPES:
                    report(shape, await measure(turns, shape, bench.count, bench.warmup))
            nursery.cancel_scope.cancel()


async def _create(client: RawClient, root: Path, port: int, binary: str) -> str:
    (root / "work").mkdir(parents=True, exist_ok=True)
    write_home(root / "pi_home", port)
    params: dict[str, Any] = {
        "harness": "pi", "cwd": str(root / "work"), "model": MODEL,
        "options": {**frame_log(root), "binary": binary, "home": str(root / "pi_home")},
        "env": offline_env(root), "permissions": {"mode": "auto"},
    }
    sid = str((await client.ok("session.create", **params))["session"]["id"])
    await client.ok("session.subscribe", session_id=sid)
    await client.events_until(sid, lambda f: f.get("type") == "event"
                              and f["event"]["type"] == "init", 60)
    return sid


if __name__ == "__main__":
    run(main, __doc__)
