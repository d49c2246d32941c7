"""What corral adds to a Codex turn: the same scripted turns driven directly and through a daemon.

Run: ``python -m tests.bench.bench_codex_turn [--turns N] [--warmup W]``. Not collected by pytest.
Needs the Codex CLI (``tests.fakes.codex_offline``); everything stays on 127.0.0.1.

Two Codex children run against one fake OpenAI server (``tests.fakes.openai_server``) in a
process of its own, scripted up front with every reply in the order the turns ask for them:

* **direct**: ``codex app-server`` spawned from our launch builder and driven by the translator
  in this process (``LiveCodex``, as in the driver's live tests): the floor any driver pays;
* **corral**: a ``corral daemon`` process running a ``codex`` session, driven by a raw protocol
  client over the websocket (``session.prompt``, then the session's events until ``result``).

Each turn is timed from sending the prompt to receiving its ``result`` event. Two turn shapes: a
**text** turn (one model call streaming a short answer) and a **tool** turn (a model call that
runs a shell command in the workspace, then a second call that answers). The paths take
turns of the same shape in rounds, so all see the same machine load and the same growth of
the thread's history; the first ``--warmup`` turns of each shape are not counted. The server's
request log must show exactly the scripted number of model calls. Rounds, ``--baseline DIR`` and
the paired figures: ``tests.bench.turns``.
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
from protocol.models import Permissions
from tests.actors.vendors.codex.live import LiveCodex, make_request
from tests.bench.turns import Bench, frame_log, Turn, corral_turn, direct_turn, daemons, measure, read_port_line, report, run
from tests.e2e.daemonproc import RawClient, raw_client
from tests.fakes.codex_offline import INSTALL_HINT, KEY_ENV, codex_binary, offline_args, offline_env
from tests.fakes.openai_server import Exec, Reply, Text

MODEL = "gpt-5.5"
SHAPES: dict[str, Callable[[int], list[Reply]]] = {
    "text": lambda n: [Text(text=f"Answer number {n}, streamed in a few small chunks.")],
    "tool": lambda n: [Exec(cmd=f"echo {n} > out-{n}.txt && echo wrote"), Text(text="Wrote it.")],
}




def script(bench: Bench) -> list[Reply]:
    """Every reply, in the order ``measure`` asks for them."""
    return [reply for shape in SHAPES for n in range(bench.warmup + bench.count)
            for _ in range(bench.paths) for reply in SHAPES[shape](n)]


async def serve_script(replies: list[Reply], directory: Path, nursery: trio.Nursery) -> int:
    """Start ``python -m tests.fakes.openai_server`` on ``replies``; returns its port."""
    (directory / "script.json").write_bytes(msgspec.json.encode(replies))
    process = await nursery.start(partial(
        trio.run_process, [sys.executable, "-m", "tests.fakes.openai_server", "--script",
                           str(directory / "script.json"), "--log", str(directory / "log.ndjson")],
        stdout=subprocess.PIPE, check=False))
    return int(await read_port_line(process, "OpenAI"))


async def main(bench: Bench) -> None:
    binary = codex_binary()
    if binary is None:
        sys.exit(f"codex is not installed ({INSTALL_HINT})")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        direct_dir = tmp / "direct"
        direct_dir.mkdir()
        replies = script(bench)
        async with trio.open_nursery() as nursery:
            port = await serve_script(replies, tmp, nursery)
            async with AsyncExitStack() as stack:
                live = LiveCodex(make_request(direct_dir, port, binary,
                                              permissions=Permissions(mode="auto_edit")),
                                 stderr_path=direct_dir / "stderr.txt")
                await nursery.start(live.run)
                stack.push_async_callback(live.close)
                await live.wait_for(lambda e: isinstance(e, Init))
                turns: dict[str, Turn] = {"direct": direct_turn(live)}
                for name, daemon in (await stack.enter_async_context(daemons(bench, tmp))).items():
                    client = await stack.enter_async_context(raw_client(daemon))
                    turns[name] = corral_turn(client, await _create(client, tmp / name, port, binary))
                print(f"codex {binary}; {bench.count} counted turns per shape after {bench.warmup} warm-up")
                for shape in SHAPES:
                    report(shape, await measure(turns, shape, bench.count, bench.warmup))
            nursery.cancel_scope.cancel()
        calls = [line for line in (tmp / "log.ndjson").read_text().splitlines()
                 if '"/v1/responses"' in line]
        if len(calls) != len(replies):
            raise RuntimeError(f"{len(calls)} model calls, {len(replies)} scripted")


async def _create(client: RawClient, root: Path, port: int, binary: str) -> str:
    """A subscribed Codex session set up like ``make_request`` sets up the direct one."""
    for name in ("work", "home", "codex_home"):
        (root / name).mkdir(exist_ok=True)
    params: dict[str, Any] = {
        "harness": "codex", "cwd": str(root / "work"), "model": MODEL,
        "options": {**frame_log(root), "binary": binary, "home": str(root / "codex_home"),
                    "extra_args": offline_args(port)},
        "env": {KEY_ENV: "sk-test-fake", "HOME": str(root / "home"),
                **offline_env(root / "codex_home")},
        "permissions": {"mode": "auto_edit"},
    }
    sid = str((await client.ok("session.create", **params))["session"]["id"])
    await client.ok("session.subscribe", session_id=sid)
    await client.events_until(sid, lambda f: f.get("type") == "event"
                              and f["event"]["type"] == "init", 60)
    return sid


if __name__ == "__main__":
    run(main, __doc__)
