"""What corral adds to a native turn: the same scripted two-call turn through corral and through
a bare ADK ``Runner``.

Run: ``python -m tests.bench.bench_native_turn [--turns N] [--warmup W]``. Not collected by
pytest. Everything stays on 127.0.0.1.

One fake model server (``python -m tests.fakes.model_server``, a process of its own) is scripted
up front with every response in the order the turns ask for them. Each turn is two model calls:
the first asks for the ``read`` tool on a small file, the second answers with a short text.

* **direct**: a bare ADK ``Runner`` in one process (this module with ``--bare``): an
  ``LlmAgent`` with the same model adapter (``actors.native.models``, ``openai`` provider,
  streaming) on ADK's in-memory session service, driven turn by turn over a pipe (one line in,
  one line out). Twice: with one plain function tool that reads the file (**plain**), and with
  corral's seven coding tools (**coding**: the declarations the model sees from corral, whose
  size the SDK's request building pays for on every call), without corral's turn loop, store,
  ask rules, event mapping, worker process or daemon;
* **corral**: a ``corral daemon`` running a native session (its worker forked by the fork
  server; ``auto`` permissions), driven by a raw protocol client: ``session.prompt``, then the
  session's events until ``result``.

Each turn is timed from the prompt to the end (the ``result`` event, or the bare runner's reply
line), the paths alternating turn by turn (so all see the same load and history growth), the
first ``--warmup`` turns of each uncounted. Printed for corral against each bare runner: median
and p90 of each path, their difference and the median of paired differences (target: ≤ 10 ms
added at the median).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import trio

from tests.bench.turns import read_port_line, report, run
from tests.e2e.daemonproc import REPO, RawClient, raw_client, start_daemon, stop_daemon
from tests.fakes.model_script import Step, call, say

KEY = "sk-bench-0123456789"
NOTES = "line one\nline two\n"


def script(count: int) -> list[Step]:
    """``count`` two-call turns (three paths times the counted and warm-up turns)."""
    return [step for n in range(count)
            for step in (call("read", path="notes.txt"), say(f"Read it ({n})."))]


async def bare_runner(port: int, work: Path, tools: str) -> None:
    """The ``--bare`` process: one ADK turn per stdin line, one line back when it ends."""
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools import FunctionTool
    from google.genai import types

    from actors.native.worker.askrules import AskRules
    from actors.native.models import ProviderConfig, build_model, close_model
    from actors.native.tools import TOOLS, Limits, Workspace
    from actors.native.worker.agent import CodingTool
    from protocol.models import Permissions

    def read(path: str) -> dict[str, Any]:
        """Read a text file of the workspace."""
        return {"output": (work / path).read_text()}

    llm = build_model(ProviderConfig(kind="openai", provider="openai", model="fake-model",
                                     base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY))
    workspace, ask_rules = Workspace(str(work), limits=Limits()), AskRules(Permissions(mode="auto"))
    agent = LlmAgent(name="bare", model=llm, instruction="You read files when asked.",
                     tools=[FunctionTool(read)] if tools == "plain" else
                     [CodingTool(spec, workspace, ask_rules) for spec in TOOLS])
    sessions = InMemorySessionService()
    runner = Runner(app_name="bare", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="bare", user_id="u")
    config = RunConfig(streaming_mode=StreamingMode.SSE)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        message = types.Content(role="user", parts=[types.Part(text=line.strip())])
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message,
                                        run_config=config):
            pass
        print("done", flush=True)
    await close_model(llm)


class Bare:
    """The bare runner process, turn by turn."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process

    async def turn(self, text: str) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        await self.process.stdin.send_all(text.encode() + b"\n")
        answer = await read_port_line(self.process, "bare runner")
        if answer.strip() != b"done":
            raise RuntimeError(f"the bare runner said {answer!r}")


async def corral_session(client: RawClient, work: Path, port: int) -> str:
    params = {"harness": "native", "cwd": str(work), "model": "openai/fake-model",
              "options": {"base_url": f"http://127.0.0.1:{port}/v1"},
              "env": {"OPENAI_API_KEY": KEY}, "permissions": {"mode": "auto"}}
    sid = str((await client.ok("session.create", **params))["session"]["id"])
    await client.ok("session.subscribe", session_id=sid)
    await client.events_until(sid, lambda f: f["event"]["type"] == "init", 300)
    return sid


async def main(count: int, warmup: int) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        work = tmp / "work"
        work.mkdir()
        (work / "notes.txt").write_text(NOTES)
        (tmp / "script.json").write_bytes(msgspec.json.encode(script(3 * (count + warmup))))
        async with trio.open_nursery() as nursery:
            server = await nursery.start(partial(
                trio.run_process, [sys.executable, "-m", "tests.fakes.model_server", "--script",
                                   str(tmp / "script.json")],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False, cwd=REPO))
            port = int(await read_port_line(server, "model"))
            daemon = await start_daemon(tmp / "state")
            try:
                async with raw_client(daemon) as client:
                    sid = await corral_session(client, work, port)
                    bare = {tools: Bare(await nursery.start(partial(
                        trio.run_process, [sys.executable, "-m", "tests.bench.bench_native_turn",
                                           "--bare", str(port), str(work), tools],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, check=False, cwd=REPO)))
                        for tools in ("plain", "coding")}

                    async def corral(text: str) -> None:
                        await client.ok("session.prompt", session_id=sid, text=text)
                        frames = await client.events_until(
                            sid, lambda f: f["event"]["type"] == "result", 120)
                        if frames[-1]["event"]["is_error"]:
                            raise RuntimeError(f"corral turn failed: {frames[-1]}")

                    paths = {"plain": bare["plain"].turn, "coding": bare["coding"].turn,
                             "corral": corral}
                    times: dict[str, list[float]] = {name: [] for name in paths}
                    for n in range(warmup + count):
                        for name, turn in paths.items():
                            started = time.perf_counter()
                            await turn(f"read notes.txt ({n})")
                            if n >= warmup:
                                times[name].append((time.perf_counter() - started) * 1000)
                    print(f"native two-call turn (read, then text); {count} counted turns after"
                          f" {warmup} warm-up. direct: a bare ADK Runner with one plain tool"
                          f" (plain) or with corral's seven coding tools (coding)")
                    for tools in ("plain", "coding"):
                        report(tools, {"direct": times[tools], "corral": times["corral"]})
                    for runner in bare.values():
                        assert runner.process.stdin is not None
                        await runner.process.stdin.aclose()
                    await client.ok("session.close", session_id=sid)
            finally:
                await stop_daemon(daemon)
            nursery.cancel_scope.cancel()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--bare"]:
        asyncio.run(bare_runner(int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]))
    else:
        run(lambda bench: main(bench.count, bench.warmup), __doc__)
