"""What corral adds to a Claude Code turn: the same scripted turns driven directly and through a daemon.

Run: ``python -m tests.bench.bench_claude_turn [--turns N] [--warmup W]``. Not collected by pytest.
Needs the Claude Code CLI (``tests.fakes.claude_offline``); everything stays on 127.0.0.1.

Two Claude children run against one fake Anthropic server (``tests.fakes.anthropic_server``) in
a process of its own, scripted up front with every reply in the order the turns ask for them:

* **direct**: ``claude`` spawned from our launch builder and driven by the translator in this
  process (``LiveClaude``, as in the driver's live tests): the floor any driver pays;
* **corral**: a ``corral daemon`` process running a ``claude`` session, driven by a raw protocol
  client over the websocket (``session.prompt``, then the session's events until ``result``).

Each turn is timed from sending the prompt to receiving its ``result`` event. Two turn shapes: a
**text** turn (one model call streaming a short answer) and a **tool** turn (a model call that
runs a Bash command writing a file in the workspace, then a second call that answers). Every
session runs with ``permissions: auto`` (Claude's ``bypassPermissions``), so no permission is
asked on any path. The paths take turns of the same shape in rounds (``tests.bench.turns``:
rotating order, ``--baseline DIR`` for a daemon of an earlier tree beside this one, paired
differences); the first ``--warmup`` turns of each shape are not counted. The server's request
log must show exactly the scripted number of model calls, and every tool turn must have written
its file.
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

from protocol.events import Result
from protocol.models import Permissions
from tests.actors.vendors.claude.live import LiveClaude, make_request
from tests.bench.turns import Bench, frame_log, Turn, corral_turn, daemons, measure, read_port_line, report, run
from tests.e2e.daemonproc import RawClient, raw_client
from tests.fakes.anthropic_script import Reply, bash, text
from tests.fakes.claude_offline import INSTALL_HINT, claude_binary, offline_env

SHAPES: dict[str, Callable[[int], list[Reply]]] = {
    "text": lambda n: [text(f"Answer number {n}, streamed in a few small chunks.")],
    "tool": lambda n: [bash(f"echo {n} > out-{n}.txt"), text("Wrote it.")],
}


def direct_turn(live: LiveClaude) -> Turn:
    """A turn function that drives ``live`` in this process."""
    async def turn(prompt: str) -> None:
        start = len(live.events)
        await live.call("prompt", text=prompt)
        result = await live.wait_for(lambda e: isinstance(e, Result), start)
        if not isinstance(result, Result) or result.is_error:
            raise RuntimeError(f"direct turn failed: {result}")
    return turn


def script(bench: Bench) -> list[Reply]:
    """Every reply, in the order ``measure`` asks for them (every path gets the same replies)."""
    return [reply for shape in SHAPES for n in range(bench.warmup + bench.count)
            for _ in range(bench.paths) for reply in SHAPES[shape](n)]


async def serve_script(replies: list[Reply], directory: Path, nursery: trio.Nursery) -> int:
    """Start ``python -m tests.fakes.anthropic_server`` on ``replies``; returns its port.

    The server writes every model request it gets to ``directory/requests.ndjson``.
    """
    (directory / "script.json").write_bytes(msgspec.json.encode(replies))
    requests = open(directory / "requests.ndjson", "wb")
    process = await nursery.start(partial(
        trio.run_process, [sys.executable, "-m", "tests.fakes.anthropic_server", "--script",
                           str(directory / "script.json")],
        stdout=subprocess.PIPE, stderr=requests, check=False))
    requests.close()
    return int((await read_port_line(process, "Anthropic")).split()[1])


async def main(bench: Bench) -> None:
    binary = claude_binary()
    if binary is None:
        sys.exit(f"Claude Code is not installed ({INSTALL_HINT})")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        direct_dir = tmp / "direct"
        direct_dir.mkdir()
        replies = script(bench)
        async with trio.open_nursery() as nursery:
            port = await serve_script(replies, tmp, nursery)
            async with AsyncExitStack() as stack:
                live = LiveClaude(make_request(direct_dir, port, binary, permissions=Permissions(mode="auto")),
                                  stderr_path=direct_dir / "stderr.txt")
                await nursery.start(live.run)
                stack.push_async_callback(live.close)
                await live.wait_ready()
                turns: dict[str, Turn] = {"direct": direct_turn(live)}
                for name, daemon in (await stack.enter_async_context(daemons(bench, tmp))).items():
                    client = await stack.enter_async_context(raw_client(daemon))
                    turns[name] = corral_turn(client, await _create(client, tmp / name, port, binary))
                print(f"claude {version} ({binary}); {bench.count} counted turns per shape and path "
                      f"after {bench.warmup} warm-up")
                for shape in SHAPES:
                    report(shape, await measure(turns, shape, bench.count, bench.warmup))
            nursery.cancel_scope.cancel()
        calls = (tmp / "requests.ndjson").read_text().splitlines()
        if len(calls) != len(replies):
            raise RuntimeError(f"{len(calls)} model calls, {len(replies)} scripted")
        for name in ("direct", *bench.daemon_paths):
            written = sorted((tmp / name / "work").glob("out-*.txt"))
            if len(written) != bench.warmup + bench.count:
                raise RuntimeError(f"{len(written)} tool turns wrote their file on the {name} path")


async def _create(client: RawClient, root: Path, port: int, binary: str) -> str:
    """A subscribed Claude session set up like ``make_request`` sets up the direct one; once idle."""
    for name in ("work", "home"):
        (root / name).mkdir(exist_ok=True)
    params: dict[str, Any] = {
        "harness": "claude", "cwd": str(root / "work"),
        "options": {**frame_log(root), "binary": binary, "home": str(root / "home" / ".claude")},
        "env": {**offline_env(port), "HOME": str(root / "home")},
        "permissions": {"mode": "auto"},
    }
    sid = str((await client.ok("session.create", **params))["session"]["id"])
    await client.ok("session.subscribe", session_id=sid)
    await client.events_until(sid, lambda f: f.get("type") == "event" and f["event"]["type"] == "status"
                              and f["event"]["state"] == "idle", 60)
    return sid


if __name__ == "__main__":
    run(main, __doc__)
