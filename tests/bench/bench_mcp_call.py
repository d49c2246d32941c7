"""An MCP tool call through the MCP actor (and through the shared endpoint) next to the same
call from a bare ``mcp.Client`` on its own stdio server, in one process and one run.

Each path calls ``echo`` on its own copy of ``tests/fakes/mcp_server.py`` (stdio), after a warm-up;
the figures are per-call latencies: median, p90, and the median added over the bare client.

* ``bare client``: ``mcp.Client(StdioServerParameters(...))``, the SDK spawning the server;
* ``actor``: ``McpActor.call`` (our process child, our pipe transport, the actor's bounds);
* ``endpoint``: an SDK client over streamable HTTP to the daemon's shared endpoint, which
  proxies to the actor: what a vendor CLI's call costs.
* ``native``: what a native session's call costs, timed in the worker's process. A stand-in
  worker (``tests/bench/native_caller.py``: the real worker's asyncio stdio loop and
  ``DaemonLink``, no ADK or model) is spawned like a real one (``open_child``, length-prefixed
  frames) and wrapped by the daemon's real ``served`` with the real ``DaemonServices`` over the
  shared registry. Per call: the bench sends a ``prompt`` frame; the worker sends
  ``mcp.call_tool`` (``mcp__bench__echo``) and times from that ask to its ``mcp.result`` in the
  link (ask frame → daemon's frame reader → ``DaemonServices`` → session binding → actor →
  server and back → answer frame → worker's stdin loop); it reports the figure in a ``tool``
  event. Not timed: the prompt and report frames, and ADK's own dispatch of the tool call.
  ``native rt`` is the same call timed by the bench, prompt frame to report frame: an upper
  bound that adds those two frames' trips (a check on the worker's figure).

Run: ``python -m tests.bench.bench_mcp_call [--calls N]``. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import httpx2
import trio
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from actors.harness import HarnessRequest
from actors.mcp.actor import ActorDeps, McpActor
from actors.mcp.config import McpConfig, McpServerConfig, definition_of
from actors.mcp.endpoint import McpEndpoint
from actors.mcp.inject import harness_servers
from actors.mcp.registry import McpRegistry
from actors.native.daemon.asks import ServedChild, served
from actors.native.daemon.services import DaemonServices
from protocol.events import Tool
from protocol.framing import LengthPrefixFramer
from protocol.native import Prompt, Shutdown, decode_worker_frame, encode_command
from supervisor.proc.child import open_child
from supervisor.proc.spec import ProcessSpec
from supervisor.tree import RestartPolicy

REPO = Path(__file__).resolve().parents[2]
ARGS = ["-m", "tests.fakes.mcp_server"]


Call = Callable[[], Awaitable[object]]


async def measure(calls: int, warmup: int = 20) -> dict[str, list[float]]:
    """Open the four paths side by side, then time them interleaved (bare, actor, endpoint,
    native, bare, …) so that every path sees the same load on a shared machine."""
    stdio = McpServerConfig(command=sys.executable, args=ARGS, cwd=str(REPO))
    params = StdioServerParameters(command=sys.executable, args=ARGS, cwd=str(REPO))
    registry = McpRegistry(McpConfig(servers={"bench": stdio}), ActorDeps(policy=RestartPolicy(), ledger=None))
    shared = McpEndpoint(registry, lambda port, host, headers: None)
    session = HarnessRequest(session_id="bench", cwd=str(REPO), work_dir=str(REPO))
    services = DaemonServices(mcp=registry, lsp=None, session=lambda sid: session if sid == "bench" else None)
    worker = ProcessSpec(key="native-bench", argv=[sys.executable, "-m", "tests.bench.native_caller"],
                         cwd=str(REPO), framing="length_prefix")
    solo = McpActor("solo", definition_of("solo", stdio), ActorDeps(policy=RestartPolicy(), ledger=None))
    async with trio.open_nursery() as nursery:
        await nursery.start(registry.run)
        await nursery.start(shared.run)
        await nursery.start(solo.run)
        [entry] = await harness_servers(registry, "bench", [], {})
        async with Client(params, cache=None) as bare, \
                httpx2.AsyncClient(headers=entry.headers) as http, \
                Client(streamable_http_client(entry.url or "", http_client=http), cache=None) as remote, \
                open_child(worker) as child, served(child, "bench", services) as native:
            native_call = _NativeCall(native)
            paths: dict[str, Call] = {
                "bare client": lambda: bare.call_tool("echo", {"text": "bench"}),
                "actor": lambda: solo.call("echo", {"text": "bench"}),
                "endpoint": lambda: remote.call_tool("echo", {"text": "bench"}),
                "native": native_call,
            }
            times: dict[str, list[float]] = {name: [] for name in [*paths, "native rt"]}
            for round in range(warmup + calls):
                for name, call in paths.items():
                    start = time.perf_counter()
                    await call()
                    elapsed = time.perf_counter() - start
                    if round >= warmup:
                        times[name].append(native_call.seconds if name == "native" else elapsed)
                        if name == "native":
                            times["native rt"].append(elapsed)
            await native.send(_FRAMER.encode(encode_command(Shutdown())))
        nursery.cancel_scope.cancel()
    return times


_FRAMER = LengthPrefixFramer()


class _NativeCall:
    """One call from the stand-in worker; ``seconds`` is the time the worker measured for it."""

    def __init__(self, worker: ServedChild) -> None:
        self._worker = worker
        self._frames = worker.frames()
        self.seconds = 0.0

    async def __call__(self) -> None:
        await self._worker.send(_FRAMER.encode(encode_command(Prompt(text="mcp__bench__echo"))))
        event = decode_worker_frame(await self._frames.__anext__())
        if not isinstance(event, Tool) or not isinstance(event.output, dict):
            raise RuntimeError(f"the stand-in worker sent {event!r}, not a tool event")
        if event.output["is_error"] or event.output["text"] != "bench":
            raise RuntimeError(f"the native call failed: {event.output['text']}")
        self.seconds = float(event.output["seconds"])


def _row(name: str, values: Sequence[float], reference: Sequence[float] | None) -> str:
    median = statistics.median(values) * 1000
    p90 = statistics.quantiles(values, n=10)[-1] * 1000
    added = "" if reference is None else \
        f"{statistics.median(v - r for v, r in zip(values, reference)) * 1000:+8.3f}"
    return f"{name:<12} {median:9.3f} {p90:9.3f} {added:>9}"


async def main(calls: int) -> None:
    times = await measure(calls)
    reference = times["bare client"]
    print(f"MCP tool call (echo), {calls} interleaved calls per path, ms (added: median of paired differences)")
    print(f"{'path':<12} {'median':>9} {'p90':>9} {'added':>9}")
    for name, values in times.items():
        print(_row(name, values, None if name == "bare client" else reference))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    trio.run(main, parser.parse_args().calls)
