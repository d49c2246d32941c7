"""Benchmark: the sandbox's network path. Run ``python -m tests.bench.bench_sandbox_net``.

Prints, next to references measured in the same run:

* one connection's cost (connect, one round trip, close; median of ``CONNECTIONS``) made
  directly to an echo server on 127.0.0.1, against the same through the allowlist proxy: over
  its Unix socket (``CONNECT``), over its loopback TCP port (Landlock mode), and through the
  bridge (``127.0.0.1:PORT`` relayed to the socket, as a ``net = "model"`` sandbox sees it), and a
  refusal (403). The goal is ≤ 3 ms added per connection.
* a sandboxed spawn of ``true`` (median of ``SPAWNS``): bare, under bubblewrap with ``net = "on"``,
  with ``net = "off"`` (its own network namespace), and with ``net = "model"`` (the namespace plus
  the bridge in front of the program): the bridge's start-up is the difference.

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

from supervisor.sandbox import SandboxPlan, wrap
from supervisor.sandbox.allowlist import Allowlist
from supervisor.sandbox.bwrap import bridge_argv
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawns(argv: list[str], env: dict[str, str]) -> list[float]:
    samples = []
    for _ in range(SPAWNS):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True)
        samples.append(time.perf_counter() - start)
    return samples


async def _connection_figures(tmp: Path) -> None:
    async def ignore(host: str, port: int) -> None:
        pass

    async with trio.open_nursery() as nursery:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        echo_port = listeners[0].socket.getsockname()[1]
        nursery.start_soon(trio.serve_listeners, _echo, listeners)
        server = ProxyServer(Allowlist.parse([f"127.0.0.1:{echo_port}"]), ignore,
                             socket_path=tmp / "proxy.sock", tcp=True)
        handle = await nursery.start(server.run)
        assert handle.tcp_port is not None
        head = f"CONNECT 127.0.0.1:{echo_port} HTTP/1.1\r\n\r\n".encode()
        answer = len(b"HTTP/1.1 200 Connection established\r\n\r\n")
        bridge_port = _free_port()
        bridge = await trio.lowlevel.open_process(
            bridge_argv(str(tmp / "proxy.sock"), bridge_port, ["sleep", "600"]))
        try:
            await _wait_listening(bridge_port)
            rows = [
                ("direct TCP connection (reference)", _tcp(echo_port), b""),
                ("through the proxy, Unix socket", _unix(str(tmp / "proxy.sock")), head),
                ("through the proxy, loopback TCP", _tcp(handle.tcp_port), head),
                ("through the bridge and the proxy", _tcp(bridge_port), head),
            ]
            figures = {}
            for name, open_one, sent in rows:
                figures[name] = min([_median_ms(await trio.to_thread.run_sync(
                    _connections, open_one, sent, answer if sent else 0)) for _ in range(3)])
            refused = min([_median_ms(await trio.to_thread.run_sync(
                _refusals, _unix(str(tmp / "proxy.sock")))) for _ in range(3)])
        finally:
            bridge.kill()
            await bridge.wait()
        direct = figures["direct TCP connection (reference)"]
        print(f"per connection (connect, one round trip, close; median of {CONNECTIONS}, best of 3):")
        for name, ms in figures.items():
            extra = "" if ms == direct else f"  (+{ms - direct:.3f} ms)"
            print(f"  {name:<40} {ms:7.3f} ms{extra}")
        print(f"  {'refused (403) through the Unix socket':<40} {refused:7.3f} ms")
        print("  goal: ≤ 3 ms added per connection")
        nursery.cancel_scope.cancel()


async def _wait_listening(port: int) -> None:
    with trio.fail_after(10):
        while True:
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                await trio.sleep(0.01)  # the bridge's start-up: nothing else to wait on
                continue
            await stream.aclose()
            return


def _spawn_figures(tmp: Path) -> None:
    env = dict(os.environ)
    sock_dir = tmp / "spawn"
    sock_dir.mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock_dir / "proxy.sock"))
    listener.listen()
    rows: list[tuple[str, list[str], dict[str, str]]] = [("bare `true` (reference)", ["true"], env)]
    for net in ("on", "off", "model"):
        plan = SandboxPlan(cwd=tmp, writable=(tmp,), net=net,  # type: ignore[arg-type]
                           proxy_socket=sock_dir / "proxy.sock" if net == "model" else None)
        argv, new_env = wrap(["true"], env, plan)
        rows.append((f"bubblewrap, net = {net!r}", argv, {k: v for k, v in new_env.items() if v is not None}))
    bridge_only = bridge_argv("x", _free_port(), ["true"])
    rows.append(("the bridge alone around `true`", bridge_only, env))
    rows.append(("`python -I -S -c pass` (the bridge's floor)", [sys.executable, "-I", "-S", "-c", "pass"], env))
    figures = [(name, min(_median_ms(_spawns(argv, e)) for _ in range(3))) for name, argv, e in rows]
    listener.close()
    reference = figures[0][1]
    print(f"spawn and wait (median of {SPAWNS}, best of 3):")
    for name, ms in figures:
        extra = "" if ms == reference else f"  (+{ms - reference:.2f} ms)"
        print(f"  {name:<44} {ms:7.2f} ms{extra}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        trio.run(_connection_figures, Path(tmp))
        _spawn_figures(Path(tmp))


if __name__ == "__main__":
    main()
