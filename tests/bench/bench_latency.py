"""Event latency under load: many sessions streaming at once, each followed by several clients,
next to a bare relay of the same children measured in the same run.

Run: ``python -m tests.bench.bench_latency [--sessions 20] [--rate 100] [--clients 2]
[--seconds 2] [--rounds 8] [--durability turn[,none]] [--baseline DIR]... [--dump FILE]``. Not
collected by pytest. Everything stays on 127.0.0.1.

Each of ``--sessions`` children writes fake-harness ``assistant`` deltas at ``--rate`` per second
(on a fixed schedule, not a fixed gap), each carrying the wall-clock time it was written, for
``--seconds`` per prompt; ``--clients`` clients follow each child. An event's latency is the time
a client read it off its socket minus the time the child wrote it. The paths take turns, round by
round, in an order that rotates:

* **corral**: a ``corral daemon`` process with one ``fake`` session per child, each client a
  TCP connection subscribed to its session (one daemon per ``--durability`` given, and one per
  ``--baseline`` source tree, e.g. ``git archive`` of an earlier commit, for an A/B in one run);
* **relay**: ``stream_relay``, one process that spawns the same children and sends each line,
  wrapped as an event frame, to the clients on its path with trio-websocket's ``send_message``.
  No log, no session, no fan-out machinery: the floor of a trio + trio-websocket daemon.

Both serving processes run as a started daemon does: each in a session of its own, and each
child too (as the daemon starts its children), so the scheduler weighs them alike (with
autogroups, a session is a group that gets its share of the CPU as a whole). The clients are
the same minimal ones on both paths (a socket, a hand-written frame parser, in this process),
so what they cost weighs on both alike; their cyclic GC waits for the end of each round, so its
pauses fall on neither path. Short rounds, many of them, let a burst of load on the machine
fall on both paths alike.

Reported per path: the median, p90 and p99 latency over every event every client read (the
first ``--warmup`` seconds of each round left out), the p99 of each round, the serving
process's CPU and how long it was runnable but waiting for a CPU (the load of the machine: a
server that waits for a CPU most of the time measures the machine, not itself). Then each
daemon's p99 over the relay's: over all events, and per cycle (a round of the daemon against
the relay's round of the same cycle, moments apart), whose median holds up better on a shared,
noisy machine, and the same median over the quieter half of the cycles (ranked by the CPU
pressure of the machine during their two rounds, ``/proc/pressure/cpu``: the share of the time
some task waited for a CPU, both paths' own work included). ``--dump`` writes every latency with
the time its event was written, to line spikes up with other traces (a daemon's GC pauses, say).
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import trio

from tests.bench.turns import cpu_ns, wait_ns
from tests.e2e.daemonproc import start_daemon, stop_daemon


def child_script(rate: float, seconds: float) -> str:
    """Python source of a streaming child: per line on stdin, ``rate`` deltas a second for
    ``seconds``, then a result."""
    return (
        "import json, sys, time\n"
        "for _ in sys.stdin:\n"
        "    due = time.time()\n"
        f"    for _ in range({round(rate * seconds)}):\n"
        "        now = time.time()\n"
        "        if due > now:\n"
        "            time.sleep(due - now)\n"
        "        sys.stdout.write(json.dumps({'type': 'assistant', 'delta': True,\n"
        "                                     'text': repr(time.time())}) + '\\n')\n"
        "        sys.stdout.flush()\n"
        f"        due += {1 / rate!r}\n"
        "    sys.stdout.write(json.dumps({'type': 'result', 'stop_reason': 'end_turn',\n"
        "                                 'is_error': False}) + '\\n')\n"
        "    sys.stdout.flush()\n"
    )


class Client:
    """A minimal websocket client: the upgrade by hand, text frames in and out, no extensions.

    Reads are stamped with the time ``receive_some`` returned; every frame in that chunk gets it.
    """

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._buffer = bytearray()

    @classmethod
    async def connect(cls, port: int, path: str) -> Client:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        stream.setsockopt(6, 1, 1)  # TCP_NODELAY, as trio-websocket's client
        key = base64.b64encode(os.urandom(16)).decode()
        await stream.send_all((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        client = cls(stream)
        while b"\r\n\r\n" not in client._buffer:
            chunk = await stream.receive_some(65536)
            if not chunk:
                raise RuntimeError("closed during the upgrade")
            client._buffer += chunk
        head, _, rest = bytes(client._buffer).partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError(f"upgrade refused: {head[:200]!r}")
        client._buffer = bytearray(rest)
        return client

    async def send(self, payload: dict[str, Any] | str) -> None:
        data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        size = len(data)
        head = bytes((0x81, 0x80 | size)) if size < 126 else bytes((0x81, 0x80 | 126)) + size.to_bytes(2, "big")
        await self.stream.send_all(head + b"\0\0\0\0" + data)  # a zero mask leaves the payload as is

    async def frames(self) -> list[tuple[bytes, float]]:
        """The text frames of the next read (at least one), each with the read's time."""
        out: list[tuple[bytes, float]] = []
        while not out:
            chunk = await self.stream.receive_some(1 << 20)
            if not chunk:
                raise EOFError
            at = time.time()
            self._buffer += chunk
            while len(self._buffer) >= 2:
                size, start = self._buffer[1] & 0x7F, 2
                if size == 126:
                    size, start = int.from_bytes(self._buffer[2:4], "big"), 4
                elif size == 127:
                    size, start = int.from_bytes(self._buffer[2:10], "big"), 10
                if len(self._buffer) < start + size:
                    break
                if self._buffer[0] & 0x0F == 0x1:
                    out.append((bytes(self._buffer[start:start + size]), at))
                elif self._buffer[0] & 0x0F == 0x8:
                    raise EOFError
                del self._buffer[:start + size]
        return out

    async def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send a request; its answer (frames before it are dropped: nothing streams yet)."""
        await self.send(request)
        while True:
            for data, _ in await self.frames():
                frame: dict[str, Any] = json.loads(data)
                if frame.get("id") == request.get("id") or frame["type"] in ("welcome", "error"):
                    if frame["type"] == "error":
                        raise RuntimeError(f"{request['type']}: {frame}")
                    return frame


class Route:
    """One path: its serving process, clients grouped by session, and a prompt for each session."""

    def __init__(self, name: str, pid: int, groups: list[list[Client]]) -> None:
        self.name = name
        self.pid = pid
        self.groups = groups
        self.cpu: list[float] = []
        self.waited: list[float] = []
        """Per round: the seconds the server was runnable but not running, per second."""
        self.round_p99: list[float] = []
        self.pressure: list[float] = []
        """Per round: the share of the time some task on the machine waited for a CPU."""
        self.samples: list[tuple[float, float]] = []
        """Each latency kept (ms), after the time its event was written."""

    async def prompt(self, index: int, client: Client) -> None:
        raise NotImplementedError

    async def round(self, events: int, warmup: float) -> None:
        """Prompt every session at once; each client reads to its ``result``."""
        started = time.time()
        keep_after = started + warmup
        before, waited, stalled = cpu_ns(self.pid), wait_ns(self.pid), _cpu_stall_us()
        first = len(self.samples)

        async def read(client: Client) -> None:
            seen = 0
            while True:
                for data, at in await client.frames():
                    frame = json.loads(data)
                    event = frame.get("event") if frame.get("type") == "event" else None
                    if event is None:
                        continue
                    if event["type"] == "result":
                        if seen != events:
                            raise RuntimeError(f"{self.name}: {seen} deltas read, {events} written")
                        return
                    if event["type"] == "assistant":
                        seen += 1
                        written = float(event["text"])
                        if written >= keep_after:
                            self.samples.append((written, (at - written) * 1000))

        # The clients' own cyclic GC would pause every client at once, on whichever path runs:
        # it waits until the round is over (what a round allocates is freed by reference counts).
        gc.collect()
        gc.disable()
        try:
            async with trio.open_nursery() as nursery:
                for group in self.groups:
                    for client in group:
                        nursery.start_soon(read, client)
                for index, group in enumerate(self.groups):
                    await self.prompt(index, group[0])
        finally:
            gc.enable()
        took = time.time() - started
        self.cpu.append((cpu_ns(self.pid) - before) / 1e9 / took)
        self.waited.append((wait_ns(self.pid) - waited) / 1e9 / took)
        self.pressure.append((_cpu_stall_us() - stalled) / 1e6 / took)
        self.round_p99.append(_pct(sorted(ms for _, ms in self.samples[first:]), 0.99))


class CorralRoute(Route):
    def __init__(self, name: str, pid: int, groups: list[list[Client]], control: Client, sids: list[str]) -> None:
        super().__init__(name, pid, groups)
        self.control = control
        self.sids = sids
        self._ids = iter(range(1000, 1 << 30))

    async def prompt(self, index: int, client: Client) -> None:
        await self.control.send({"type": "session.prompt", "id": next(self._ids),
                                 "session_id": self.sids[index], "text": "go"})


class RelayRoute(Route):
    async def prompt(self, index: int, client: Client) -> None:
        await client.send("go")


async def corral_route(stack: AsyncExitStack, root: Path, script: str, sessions: int,
                       clients: int, durability: str, name: str, source: Path | None = None) -> CorralRoute:
    root.mkdir()
    config = root / "corral.toml"
    config.write_text(f'[sessions]\ndurability = "{durability}"\n')
    daemon = await start_daemon(root / "state", config=str(config), source=source, new_session=True)
    stack.push_async_callback(stop_daemon, daemon, 120)

    async def greeted() -> Client:
        client = await Client.connect(daemon.port, "/v1")
        stack.push_async_callback(client.stream.aclose)
        await client.call({"type": "hello", "protocol": 1, "token": daemon.token})
        return client

    control = await greeted()
    sids = []
    for n in range(sessions):
        created = await control.call({"type": "session.create", "id": n + 1, "harness": "fake",
                                      "cwd": str(root),
                                      "options": {"script": f"exec {sys.executable} -c {_quote(script)}"}})
        sids.append(created["result"]["session"]["id"])
    groups = []
    for sid in sids:
        group = []
        for _ in range(clients):
            client = await greeted()
            await client.call({"type": "session.subscribe", "id": 1, "session_id": sid})
            group.append(client)
        groups.append(group)
    return CorralRoute(name, daemon.process.pid, groups, control, sids)


async def relay_route(stack: AsyncExitStack, nursery: trio.Nursery, script: str, sessions: int,
                      clients: int) -> RelayRoute:
    process: trio.Process = await nursery.start(_run_relay, script, sessions)
    stack.callback(process.kill)
    port = int((await _line(process)).decode())
    groups = []
    for n in range(sessions):
        group = []
        for _ in range(clients):
            client = await Client.connect(port, f"/{n}")
            stack.push_async_callback(client.stream.aclose)
            group.append(client)
        groups.append(group)
    return RelayRoute("relay", process.pid, groups)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--rate", type=float, default=100.0, help="events per second per session")
    parser.add_argument("--clients", type=int, default=2, help="clients per session")
    parser.add_argument("--seconds", type=float, default=2.0, help="streaming time per round")
    parser.add_argument("--warmup", type=float, default=0.5, help="seconds left out of each round")
    parser.add_argument("--rounds", type=int, default=8, help="rounds per path")
    parser.add_argument("--baseline", action="append", default=[], type=Path,
                        help="also a daemon run from this source tree (e.g. a `git archive` of an "
                             "earlier commit); repeatable")
    parser.add_argument("--durability", default="turn",
                        help="the daemon's [sessions] durability; several (turn,none): a daemon each")
    parser.add_argument("--dump", type=Path,
                        help="write every latency kept to this file (path, time written, ms), to line "
                             "spikes up with other traces")
    args = parser.parse_args()
    script = child_script(args.rate, args.seconds)
    events = round(args.rate * args.seconds)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        async with trio.open_nursery() as nursery, AsyncExitStack() as stack:
            routes: list[Route] = [
                await corral_route(stack, Path(tmp) / durability, script, args.sessions, args.clients,
                                   durability, "corral" if durability == "turn" else f"corral/{durability}")
                for durability in args.durability.split(",")]
            for n, source in enumerate(args.baseline):
                routes.append(await corral_route(stack, Path(tmp) / f"baseline{n}", script, args.sessions,
                                                 args.clients, "turn", f"baseline{n or ''}", source))
            routes.append(await relay_route(stack, nursery, script, args.sessions, args.clients))
            for n in range(args.rounds):
                for route in routes[n % len(routes):] + routes[:n % len(routes)]:
                    await route.round(events, args.warmup)
            await stack.aclose()
            nursery.cancel_scope.cancel()
    if args.dump:
        with args.dump.open("w") as out:
            for route in routes:
                out.writelines(f"{route.name} {written:.6f} {ms:.3f}\n" for written, ms in route.samples)
    print(f"{args.sessions} sessions x {args.rate:g} events/s x {args.clients} clients, "
          f"{args.rounds} rounds of {args.seconds:g} s per path; load average {os.getloadavg()[0]:.1f}")
    p99 = {}
    for route in routes:
        lat = sorted(ms for _, ms in route.samples)
        p99[route.name] = _pct(lat, 0.99)
        print(f"{route.name:>12}  event latency median {statistics.median(lat):6.2f} ms  p90 {_pct(lat, 0.9):6.2f} ms"
              f"  p99 {p99[route.name]:6.2f} ms  ({len(lat)} events)"
              f"   server CPU {statistics.median(route.cpu) * 100:4.0f} % of a core,"
              f" waiting for one {statistics.median(route.waited) * 100:4.0f} % of the time")
        print(f"{'':>12}  p99 per round {' '.join(f'{p:.1f}' for p in route.round_p99)}"
              f"  (median {statistics.median(route.round_p99):.2f} ms)")
        print(f"{'':>12}  CPU pressure per round {' '.join(f'{p * 100:.0f}' for p in route.pressure)} %")
    relay = routes[-1]
    for route in routes[:-1]:
        paired = sorted(ours / max(theirs, 1e-9) for ours, theirs in zip(route.round_p99, relay.round_p99))
        print(f"p99 {route.name}/relay: {p99[route.name] / p99['relay']:.2f} over all events; per cycle "
              f"median {statistics.median(paired):.2f} (quartiles {_pct(paired, 0.25):.2f}..{_pct(paired, 0.75):.2f})")
        cycles = sorted(zip(route.pressure, relay.pressure, route.round_p99, relay.round_p99),
                        key=lambda c: max(c[:2]))
        quiet = cycles[:max(1, len(cycles) // 2)]
        print(f"{'':>12}  the quieter half of the cycles ({len(quiet)}, CPU pressure "
              f"{max(max(c[:2]) for c in quiet) * 100:.0f} % at most): per cycle median "
              f"{statistics.median(ours / max(theirs, 1e-9) for _, _, ours, theirs in quiet):.2f}")


def _cpu_stall_us() -> int:
    """The time some task on the machine waited for a CPU so far, in µs (``some total`` of
    ``/proc/pressure/cpu``): how loaded the machine was during a round, both paths' own work
    included."""
    with open("/proc/pressure/cpu") as handle:
        return int(handle.readline().rsplit("=", 1)[1])


def _pct(ordered: list[float], q: float) -> float:
    return ordered[int(q * (len(ordered) - 1))]


async def _run_relay(script: str, sessions: int, task_status: trio.TaskStatus[trio.Process]) -> None:
    await trio.run_process([sys.executable, "-m", "tests.bench.stream_relay", script, str(sessions)],
                           stdout=subprocess.PIPE, check=False, start_new_session=True,
                           task_status=task_status)


async def _line(process: trio.Process) -> bytes:
    assert process.stdout is not None
    line = b""
    while not line.endswith(b"\n"):
        chunk = await process.stdout.receive_some(1)
        if not chunk:
            raise RuntimeError("the relay exited before printing its port")
        line += chunk
    return line.strip()


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


if __name__ == "__main__":
    trio.run(main)
