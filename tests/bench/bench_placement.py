"""The Ray placement backend's figures, each beside the local backend's in the same run.

Run: ``python -m tests.bench.bench_placement [--turns 60] [--lines 200000] [--sessions 20]``.
Not collected by pytest. It starts its own loopback ``ray.cluster_utils.Cluster`` (a zero-CPU
head, two one-CPU nodes; ``tests.raycluster``'s settings) and shuts it down at the end.

* **round trip**: a ``fake`` session's prompt → ``result`` round trip through a daemon, as a
  client sees it, on ``[placement] backend = "local"`` and on ``"ray"`` (the child on a node,
  its frames through the node agent and the gateway); turns alternate between the two daemons,
  so both see the same load. The median and p90 of each, and the ray median minus the local one
  (the issue's target: ≤ 5 ms).
* **relay**: one child bursting ``--lines`` NDJSON lines, read frame by frame by the daemon's
  side (``RayPlacement.open`` → ``RemoteChild.frames()``: agent batches, Ray stream, gateway,
  Unix socket, daemon-side framing) against the same child under ``open_child`` in this process.
  Frames per second of each, spawn and close included, the median of five bursts (target:
  ≥ 100,000 through one agent).
* **agent memory**: the USS of one node agent with no child, then with ``--sessions`` children
  (``cat``), children excluded (target: ≤ 80 MB); this process's USS beside it for scale.
* **failures** (the failure model's figures; ``heartbeat_timeout = 5``, Ray's health checks as
  in the tests): a fake session's node agent SIGKILLed ``--kills`` times, then the gateway
  ``--kills`` times (the daemon starts a new one: its ``restarted`` and ``init`` measure the
  gateway's restart, a new ``ray.init`` included), then a raylet: from the kill to the session's
  ``exit {reason: lost}``, to its ``restarted`` and to its new child's ``init``, and to the moment
  the old child is gone (polled every 10 ms).
* **head loss** (``--head``, last: the cluster is dead after it): the head's GCS killed under a
  fake session on a node: a prompt's result during the outage, the session's ``exit {reason:
  lost}`` and the old child's end, and how long ``corral stop`` takes then.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import trio

from supervisor.placement.ray.client import RayPlacement
from supervisor.proc.child import open_child
from supervisor.proc.spec import ProcessSpec
from tests.e2e.daemonproc import raw_client, start_daemon, stop_daemon
from tests.raycluster import RAY_ENV

BURST = ("import sys\nn = int(sys.argv[1])\nw = sys.stdout.write\n"
         "for i in range(n):\n    w('{\"type\":\"delta\",\"i\":%d}\\n' % i)\nsys.stdout.flush()\n")


async def _turns(address: str, root: Path, turns: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"local": [], "ray": []}
    daemons = {}
    try:
        for backend in times:
            config = root / f"{backend}.toml"
            config.write_text(f'[placement]\nbackend = "{backend}"\naddress = "{address}"\n')
            daemons[backend] = await start_daemon(root / f"state-{backend}", config=str(config), timeout=180)
        clients: dict[str, Any] = {}
        async with raw_client(daemons["local"]) as local, raw_client(daemons["ray"]) as ray:
            clients = {"local": local, "ray": ray}
            sids = {}
            for backend, client in clients.items():
                session = (await client.ok("session.create", harness="fake", cwd=str(root)))["session"]
                sids[backend] = session["id"]
                await client.ok("session.subscribe", session_id=session["id"])
                await client.events_until(session["id"], lambda f: f["event"]["type"] == "init", timeout=60)
            for turn in range(turns + 5):
                order = list(clients) if turn % 2 == 0 else list(reversed(clients))
                for backend in order:
                    client, sid = clients[backend], sids[backend]
                    started = time.perf_counter()
                    await client.ok("session.prompt", session_id=sid, text=f"turn {turn}")
                    await client.events_until(sid, lambda f: f["event"]["type"] == "result", timeout=60)
                    if turn >= 5:  # warm-up left out
                        times[backend].append((time.perf_counter() - started) * 1000)
            for backend, client in clients.items():
                await client.ok("session.close", session_id=sids[backend])
    finally:
        for daemon in daemons.values():
            await stop_daemon(daemon, timeout=60)
    return times


async def _until(client: Any, sid: str, kind: str) -> float:
    await client.events_until(sid, lambda f: f["event"]["type"] == kind, timeout=60)
    return time.perf_counter()


async def _gone_at(pid: int) -> float:
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return time.perf_counter()
        except psutil.NoSuchProcess:
            return time.perf_counter()
        await trio.sleep(0.01)


async def _one_failure(client: Any, root: Path, kill: Any) -> dict[str, float]:
    """Run ``kill(session)`` on a new fake session and time what follows (seconds from the
    kill); a session of its own each time, so no run counts towards another's restart limit."""
    sid = (await client.ok("session.create", harness="fake", cwd=str(root)))["session"]["id"]
    await client.ok("session.subscribe", session_id=sid)
    await _until(client, sid, "init")
    session = (await client.ok("session.get", session_id=sid))["session"]
    old = session["pid"]
    results: dict[str, float] = {}
    async with trio.open_nursery() as nursery:
        async def gone() -> None:
            results["old child gone"] = await _gone_at(old)
        killed = time.perf_counter()
        await kill(session)
        nursery.start_soon(gone)
        results["exit lost"] = await _until(client, sid, "exit")
        results["restarted"] = await _until(client, sid, "restarted")
        results["init of the new child"] = await _until(client, sid, "init")
    await client.ok("session.close", session_id=sid)
    return {what: at - killed for what, at in results.items()}


async def _failures(cluster: Any, root: Path, kills: int) -> dict[str, list[dict[str, float]]]:
    config = root / "failures.toml"
    config.write_text(f'[placement]\nbackend = "ray"\naddress = "{cluster.address}"\n')
    daemon = await start_daemon(root / "state-failures", config=str(config), timeout=180)
    out: dict[str, list[dict[str, float]]] = {"agent SIGKILL": [], "gateway SIGKILL": [],
                                              "raylet SIGKILL": []}
    try:
        async with raw_client(daemon) as client:
            async def kill_agent(session: dict[str, Any]) -> None:
                nodes = (await client.ok("placement.status"))["nodes"]
                (agent,) = [n["agent_pid"] for n in nodes if n["node_id"] == session["placement"]["node_id"]]
                os.kill(agent, 9)

            async def kill_gateway(session: dict[str, Any]) -> None:
                (gateway,) = [p for p in daemon.descendants()
                              if "supervisor.placement.ray.gateway" in " ".join(p.cmdline())]
                gateway.kill()

            async def kill_raylet(session: dict[str, Any]) -> None:
                (node,) = [n for n in cluster.list_all_nodes() if n.node_id == session["placement"]["node_id"]]
                node.kill_raylet()

            for _ in range(kills):
                out["agent SIGKILL"].append(await _one_failure(client, root, kill_agent))
                await trio.sleep(2.0)  # the next scan gives the node its new agent
            for _ in range(kills):
                out["gateway SIGKILL"].append(await _one_failure(client, root, kill_gateway))
            out["raylet SIGKILL"].append(await _one_failure(client, root, kill_raylet))
    finally:
        await stop_daemon(daemon, timeout=60)
    return out


async def _head_loss(cluster: Any, root: Path) -> dict[str, float]:
    """Kill the head's GCS under a fake session on a node (no GCS fault tolerance): seconds from
    the kill to a prompt's result during the outage, to the session's ``exit {reason: lost}``
    and to the old child's end; then how long ``corral stop`` takes. The cluster is dead after."""
    config = root / "head.toml"
    config.write_text(f'[placement]\nbackend = "ray"\naddress = "{cluster.address}"\n')
    daemon = await start_daemon(root / "state-head", config=str(config), timeout=180)
    out: dict[str, float] = {}
    try:
        async with raw_client(daemon) as client:
            sid = (await client.ok("session.create", harness="fake", cwd=str(root)))["session"]["id"]
            await client.ok("session.subscribe", session_id=sid)
            await _until(client, sid, "init")
            old = (await client.ok("session.get", session_id=sid))["session"]["pid"]
            killed = time.perf_counter()
            cluster.head_node.kill_gcs_server()
            await trio.sleep(5.0)  # well into the outage
            await client.ok("session.prompt", session_id=sid, text="during the outage")
            out["result of a prompt sent 5 s in"] = await _until(client, sid, "result") - killed
            await client.events_until(sid, lambda f: f["event"]["type"] == "exit", timeout=180)
            out["exit lost"] = time.perf_counter() - killed
            with trio.fail_after(60):
                out["old child gone"] = await _gone_at(old) - killed
    finally:
        stopping = time.perf_counter()
        await stop_daemon(daemon, timeout=120)
        out["corral stop took"] = time.perf_counter() - stopping
    return out


async def _count(frames: Any) -> int:
    count = 0
    async for _ in frames:
        count += 1
    return count


async def _relay(placement: RayPlacement, lines: int, rounds: int) -> dict[str, float]:
    """The median rate of ``rounds`` bursts on each path, alternating; spawn and close included."""
    argv = [sys.executable, "-c", BURST, str(lines)]
    async with placement.open(ProcessSpec(key="session:warm:1", argv=argv[:3] + ["1"])) as child:
        await _count(child.frames())  # the agents are up, and warm
    rates: dict[str, list[float]] = {"local": [], "ray": []}
    for turn in range(rounds):
        for path in ("local", "ray"):
            spec = ProcessSpec(key=f"session:burst-{path}:{turn + 1}", argv=argv, frame_limit=1 << 20)
            started = time.perf_counter()
            async with (open_child(spec) if path == "local" else placement.open(spec)) as child:
                got = await _count(child.frames())
            rates[path].append(got / (time.perf_counter() - started))
            assert got == lines, f"{path}: {got} frames of {lines}, {getattr(child, 'status', None)}"
    return {path: statistics.median(values) for path, values in rates.items()}


async def _memory(placement: RayPlacement, sessions: int) -> dict[str, float]:
    listed = await placement.nodes()
    assert listed is not None
    node = next(n for n in listed.nodes if n.agent_pid)
    agent = psutil.Process(node.agent_pid)
    out = {"agent, no child": agent.memory_full_info().uss / 2**20}
    async with trio.open_nursery() as nursery:
        opened = trio.Event()
        count = 0

        async def hold(i: int) -> None:
            nonlocal count
            spec = ProcessSpec(key=f"session:mem{i}:1", argv=["cat"])
            async with placement.open(spec, node=node.node_id):
                count += 1
                if count == sessions:
                    opened.set()
                await trio.sleep_forever()

        for i in range(sessions):
            nursery.start_soon(hold, i)
        await opened.wait()
        await trio.sleep(1.0)  # let the agent's allocations settle before the reading
        out[f"agent, {sessions} children"] = agent.memory_full_info().uss / 2**20
        nursery.cancel_scope.cancel()
    out["this bench process (for scale)"] = psutil.Process().memory_full_info().uss / 2**20
    return out


async def _engine(address: str, root: Path, lines: int, sessions: int) -> tuple[dict[str, float], dict[str, float]]:
    placement = RayPlacement(root / "engine", None, address=address)
    (root / "engine").mkdir()
    async with trio.open_nursery() as nursery:
        await nursery.start(placement.run)
        relay = await _relay(placement, lines, 5)
        memory = await _memory(placement, sessions)
        nursery.cancel_scope.cancel()
    return relay, memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--head", action="store_true",
                        help="last, kill the head's GCS (the cluster is not usable after)")
    args = parser.parse_args()
    os.environ.update(RAY_ENV)
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        with tempfile.TemporaryDirectory(dir=os.path.expanduser("~")) as tmp:
            root = Path(tmp)
            times = trio.run(_turns, cluster.address, root, args.turns)
            relay, memory = trio.run(_engine, cluster.address, root, args.lines, args.sessions)
            failures = trio.run(_failures, cluster, root, args.kills)
            head = trio.run(_head_loss, cluster, root) if args.head else {}
    finally:
        cluster.shutdown()
    print(f"prompt -> result round trip, fake session, {args.turns} turns each (ms)")
    for backend, values in times.items():
        ordered = sorted(values)
        print(f"  {backend:6} median {statistics.median(values):7.2f}   p90 {ordered[int(0.9 * len(ordered))]:7.2f}")
    print(f"  ray - local (median): {statistics.median(times['ray']) - statistics.median(times['local']):+.2f} ms"
          "   (target: <= +5 ms)")
    print(f"relay of a bursting child, {args.lines} frames, median of 5 (frames/s)")
    for path, rate in relay.items():
        print(f"  {path:6} {rate:12,.0f}")
    print("   (target: ray >= 100,000)")
    print(f"node agent memory, USS (MB), children excluded (target: <= 80 with {args.sessions})")
    for what, mb in memory.items():
        print(f"  {what:32} {mb:7.1f}")
    print("failures: seconds from the kill (heartbeat_timeout 5 s; health checks 500 ms x 3)")
    for kind, runs in failures.items():
        for run in runs:
            print(f"  {kind:15} " + "   ".join(f"{what} {at:6.3f}" for what, at in run.items()))
    if head:
        print("the head's GCS killed: seconds from the kill")
        for what, at in head.items():
            print(f"  {what:32} {at:7.2f}")


if __name__ == "__main__":
    main()
