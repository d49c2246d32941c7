"""Benchmark: the sandbox's network path. Run ``python -m tests.bench.bench_sandbox_net``.

Prints, next to references measured in the same run:

* one connection's cost (connect, one round trip, close; median of ``CONNECTIONS``) made
  directly to an echo server on 127.0.0.1, against the same through the allowlist proxy: over
  its Unix socket (``CONNECT``), over its loopback TCP port (Landlock mode), and on its listener
  inside a session's network namespace (``127.0.0.1:3128`` as a ``net = "model"`` sandbox sees
  it, reached by a client in that namespace), and a refusal (403). The goal is ≤ 3 ms added per
  connection.
* a sandboxed spawn of ``true`` (median of ``SPAWNS``): bare, under bubblewrap with ``net = "on"``,
  with ``net = "off"`` (its own network namespace), and with ``net = "model"`` (joining the
  session's namespace with ``nsenter``: the proxy already listens there). Goal: ≤ 5 ms a spawn.
  Making the namespace (once per session, before the harness) is printed apart.

The clients run in a worker thread with blocking sockets (a program's view); the proxy runs in
the trio thread, as in the daemon.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import trio

from supervisor.sandbox import BRIDGE_PORT, SandboxPlan, wrap
from supervisor.sandbox.allowlist import Allowlist
from supervisor.sandbox.sandboxnet import SandboxNet, make_net
from supervisor.sandbox.proxy import ProxyServer

CONNECTIONS = 300
SPAWNS = 30


async def _echo(stream: trio.SocketStream) -> None:
    async with stream:
        while data := await stream.receive_some(65536):
            await stream.send_all(data)


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _connections(open_one: Callable[[], socket.socket], head: bytes, answer_len: int) -> list[float]:
    samples = []
    for _ in range(CONNECTIONS):
        start = time.perf_counter()
        with open_one() as sock:
            if head:
                sock.sendall(head)
                got = b""
                while len(got) < answer_len:
                    got += sock.recv(4096)
            sock.sendall(b"x")
            if sock.recv(1) != b"x":
                raise RuntimeError("no echo")
        samples.append(time.perf_counter() - start)
    return samples


def _refusals(open_one: Callable[[], socket.socket]) -> list[float]:
    samples = []
    for _ in range(CONNECTIONS):
        start = time.perf_counter()
        with open_one() as sock:
            sock.sendall(b"CONNECT refused.example:443 HTTP/1.1\r\n\r\n")
            while sock.recv(4096):
                pass
        samples.append(time.perf_counter() - start)
    return samples


def _unix(path: str) -> Callable[[], socket.socket]:
    def open_one() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        return sock
    return open_one


def _tcp(port: int) -> Callable[[], socket.socket]:
    return lambda: socket.create_connection(("127.0.0.1", port))


def _spawns(argv: list[str], env: dict[str, str]) -> list[float]:
    samples = []
    for _ in range(SPAWNS):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, start_new_session=True)
        samples.append(time.perf_counter() - start)
    return samples


_INSIDE_CLIENT = """
import socket, sys, time
port, head, answer, count = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3]), int(sys.argv[4])
for _ in range(count):
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head + b"ping")
        got = b""
        while len(got) < answer + 4:
            got += s.recv(4096)
    print(time.perf_counter() - start)
"""


async def _connection_figures(tmp: Path) -> None:
    async def ignore(host: str, port: int) -> None:
        pass

    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        echo_port = listeners[0].socket.getsockname()[1]
        nursery.start_soon(trio.serve_listeners, _echo, listeners)
        net = await make_net(tmp, BRIDGE_PORT, name="bench")
        try:
            server = ProxyServer(Allowlist.parse([f"127.0.0.1:{echo_port}"]), ignore,
                                 socket_path=tmp / "proxy.sock", tcp=True)
            server.inside = net.listener
            handle = await nursery.start(server.run)
            assert handle.tcp_port is not None
            head = f"CONNECT 127.0.0.1:{echo_port} HTTP/1.1\r\n\r\n".encode()
            answer = len(b"HTTP/1.1 200 Connection established\r\n\r\n")
            rows = [
                ("direct TCP connection (reference)", _tcp(echo_port), b""),
                ("through the proxy, Unix socket", _unix(str(tmp / "proxy.sock")), head),
                ("through the proxy, loopback TCP", _tcp(handle.tcp_port), head),
            ]
            figures = {}
            for name, open_one, sent in rows:
                figures[name] = min([_median_ms(await trio.to_thread.run_sync(
                    _connections, open_one, sent, answer if sent else 0)) for _ in range(3)])
            figures["in the namespace, to the proxy's listener"] = min(
                [_median_ms(await _inside(net, head.decode(), answer)) for _ in range(3)])
            refused = min([_median_ms(await trio.to_thread.run_sync(
                _refusals, _unix(str(tmp / "proxy.sock")))) for _ in range(3)])
        finally:
            net.close()
        direct = figures["direct TCP connection (reference)"]
        print(f"per connection (connect, one round trip, close; median of {CONNECTIONS}, best of 3):")
        for name, ms in figures.items():
            extra = "" if ms == direct else f"  (+{ms - direct:.3f} ms)"
            print(f"  {name:<44} {ms:7.3f} ms{extra}")
        print(f"  {'refused (403) through the Unix socket':<44} {refused:7.3f} ms")
        print("  goal: ≤ 3 ms added per connection")
        nursery.cancel_scope.cancel()


async def _inside(net: SandboxNet, head: str, answer: int) -> list[float]:
    """Connections made by a client inside the namespace (it times them itself)."""
    argv = [*net.join(), sys.executable, "-I", "-S", "-c", _INSIDE_CLIENT, str(BRIDGE_PORT), head,
            str(answer), str(CONNECTIONS)]
    done = await trio.run_process(argv, capture_stdout=True)
    return [float(line) for line in done.stdout.decode().split()]


async def _made(tmp: Path) -> tuple[float, SandboxNet]:
    start = time.perf_counter()
    net = await make_net(tmp, BRIDGE_PORT, name="bench")
    return time.perf_counter() - start, net


def _spawn_figures(tmp: Path) -> None:
    env = dict(os.environ)
    made, net = trio.run(_made, tmp)
    try:
        rows: list[tuple[str, list[str], dict[str, str]]] = [("bare `true` (reference)", ["true"], env)]
        for mode in ("on", "off", "model"):
            plan = SandboxPlan(cwd=tmp, writable=(tmp,), net=mode)  # type: ignore[arg-type]
            argv, new_env = wrap(["true"], env, plan, join=net.join() if mode == "model" else ())
            rows.append((f"bubblewrap, net = {mode!r}", argv, {k: v for k, v in new_env.items() if v is not None}))
        figures = [(name, min(_median_ms(_spawns(argv, e)) for _ in range(3))) for name, argv, e in rows]
    finally:
        net.close()
    reference = figures[0][1]
    print(f"spawn and wait, in a new session as corral spawns (median of {SPAWNS}, best of 3):")
    for name, ms in figures:
        extra = "" if ms == reference else f"  (+{ms - reference:.2f} ms)"
        print(f"  {name:<44} {ms:7.2f} ms{extra}   (goal: ≤ +5 ms)")
    print(f"  making the session's namespace (once, before its harness): {made * 1e3:.1f} ms")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        trio.run(_connection_figures, Path(tmp))
        _spawn_figures(Path(tmp))


if __name__ == "__main__":
    main()
