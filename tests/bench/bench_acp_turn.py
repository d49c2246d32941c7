"""What corral adds to an ACP agent's turn: the same scripted turns driven directly and through a
daemon, for Gemini CLI, Copilot CLI, claude-code-acp, opencode acp or codex-acp.

Run: ``.ci/vendor-netns python3 -m tests.bench.bench_acp_turn AGENT [--turns N] [--warmup W]``.
Not collected by pytest. Needs the agent (``tests.fakes.acp_offline``); all on 127.0.0.1.

Two children of the agent run against one fake model server (``tests.fakes.model_server``, in
this process, scripted up front in the order the turns ask):

* **direct**: the agent spawned from our launch builder and driven by the translator in this
  process (``LiveAcp``, as in the driver's live tests): the floor any ACP client pays. It
  serves files and terminals as a corral session does (``runs_work``), so the agent runs the
  same tools on both paths (claude-code-acp, offered terminals, has ``mcp__acp__Bash`` and no
  ``Bash``); every tool turn must have written its file on every path;
* **corral**: a ``corral daemon`` process running a session of the agent, driven by a raw
  protocol client over the websocket (``session.prompt``, then events until ``result``).

Turns are timed from the prompt to its ``result``: a **text** turn (one streamed answer) and a
**tool** turn (a shell command the agent runs itself, then an answer), in rounds over the paths;
the first ``--warmup`` turns of each shape are not counted. Rounds, ``--baseline DIR`` and the
paired figures: ``tests.bench.turns``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import trio

from actors.harness import HarnessRequest
from protocol.models import Permissions
from tests.actors.vendors.acp.live import LiveAcp
from tests.bench.turns import Bench, frame_log, Turn, corral_turn, direct_turn, arguments, bench_of, daemons, measure, report
from tests.e2e.daemonproc import RawClient, raw_client
from tests.fakes.acp_offline import MODELS, aside, binary, install_hint, offline
from tests.fakes.model_script import Turn as Step
from tests.fakes.model_script import call, say
from tests.fakes.model_server import FakeModels


def shapes(agent: str) -> dict[str, Callable[[int], list[Step]]]:
    def shell(n: int) -> Step:
        command = f"echo {n} > out-{n}.txt"
        if agent == "gemini":
            return call("run_shell_command", command=command)
        if agent in ("copilot", "opencode-acp"):
            return call("bash", command=command, description="write")
        if agent == "codex-acp":
            return call("exec_command", cmd=command)
        # claude-code-acp swaps its own Bash for this one when the client serves terminals
        return call("mcp__acp__Bash", command=command, description="write", timeout=10000)
    return {"text": lambda n: [say(f"Answer number {n}, streamed in a few small chunks.")],
            "tool": lambda n: [shell(n), say("Wrote it.")]}




async def main(agent: str, bench: Bench) -> None:
    path = binary(agent)
    if path is None:
        raise SystemExit(f"{agent} is not installed ({install_hint(agent)})")
    table = shapes(agent)
    steps = [step for shape in table for n in range(bench.warmup + bench.count)
             for _ in range(bench.paths) for step in table[shape](n)]
    server = FakeModels(steps, aside=aside(agent))
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            async with AsyncExitStack() as stack:
                live = LiveAcp(agent, _request(agent, tmp / "direct", port, path),
                               stderr_path=tmp / "direct-stderr.txt")
                await nursery.start(live.run)
                stack.push_async_callback(live.close)
                await live.wait_until(lambda: live.translator.ready)
                turns: dict[str, Turn] = {"direct": direct_turn(live)}
                for name, daemon in (await stack.enter_async_context(daemons(bench, tmp))).items():
                    client = await stack.enter_async_context(raw_client(daemon))
                    turns[name] = corral_turn(client, await _create(client, agent, tmp / name, port, path))
                print(f"{agent} {path}; {bench.count} counted turns per shape after {bench.warmup} warm-up")
                for shape in table:
                    report(shape, await measure(turns, shape, bench.count, bench.warmup))
            nursery.cancel_scope.cancel()
        if len(server.model_requests()) != len(steps):
            raise RuntimeError(f"{len(server.model_requests())} model calls, {len(steps)} scripted")
        for name in ("direct", *bench.daemon_paths):
            written = len(list((tmp / name / "work").glob("out-*.txt")))
            if written != bench.warmup + bench.count:
                raise RuntimeError(f"{name}: {written} tool turns wrote their file, "
                                   f"{bench.warmup + bench.count} ran")


def _request(agent: str, root: Path, port: int, path: str) -> HarnessRequest:
    for name in ("work", "run"):
        (root / name).mkdir(parents=True, exist_ok=True)
    env, options = offline(agent, port, root / "home")
    return HarnessRequest(session_id="s-bench", cwd=str(root / "work"), model=MODELS[agent],
                          env=env, options={**options, "binary": path},
                          work_dir=str(root / "run"), permissions=Permissions(mode="auto"),
                          runs_work=True)


async def _create(client: RawClient, agent: str, root: Path, port: int, path: str) -> str:
    request = _request(agent, root, port, path)
    params: dict[str, Any] = {"harness": agent, "cwd": request.cwd, "env": request.env,
                              "options": {**request.options, **frame_log(root)}, "permissions": {"mode": "auto"}}
    if request.model:
        params["model"] = request.model
    sid = str((await client.ok("session.create", **params))["session"]["id"])
    await client.ok("session.subscribe", session_id=sid)
    await client.events_until(sid, lambda f: f.get("type") == "event"
                              and f["event"]["type"] == "status"
                              and f["event"]["state"] == "idle", 120)
    return sid


if __name__ == "__main__":
    parser = arguments(__doc__)
    parser.add_argument("agent", choices=["gemini", "copilot", "claude-acp", "opencode-acp", "codex-acp"])
    args = parser.parse_args()
    trio.run(main, args.agent, bench_of(args))
