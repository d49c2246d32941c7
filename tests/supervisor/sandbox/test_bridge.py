"""The in-sandbox bridge as a real process: relaying, exit status, signals, parent death, and
inside real bubblewrap with a network namespace of its own, in front of the real proxy."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
import trio

from supervisor.sandbox import BRIDGE_PORT, SandboxPlan, wrap
from supervisor.sandbox.allowlist import Allowlist
from supervisor.sandbox.bwrap import bridge_argv
from supervisor.sandbox.plan import NetMode
from supervisor.sandbox.proxy import ProxyServer
from tests.supervisor.sandbox.test_proxy import Upstream

BRIDGE = bridge_argv("SOCKET", 1, [])[:4]  # the interpreter and the bridge's file, as sandboxes run it

# A client as a sandboxed program would be: it talks to the proxy named by HTTPS_PROXY.
_CLIENT = textwrap.dedent("""
    import os, socket, sys
    proxy = os.environ["HTTPS_PROXY"].rsplit(":", 1)
    target = sys.argv[1]
    with socket.create_connection(("127.0.0.1", int(proxy[1])), timeout=10) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\\r\\n\\r\\nhello".encode())
        got = b""
        while b"HELLO" not in got:  # a tunnel echoes it; a refusal ends with the proxy closing
            data = s.recv(4096)
            if not data:
                break
            got += data
    print(got.decode().replace("\\r\\n", "|"))
""")

# Reaching a port directly, without the proxy: what a sandbox must not allow.
_DIRECT = textwrap.dedent("""
    import socket, sys
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()
        print("connected")
    except OSError as exc:
        print("refused", exc.errno)
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _proxy(nursery: trio.Nursery, sock: Path, allow: list[str]) -> list[tuple[str, int]]:
    denied: list[tuple[str, int]] = []

    async def on_denied(host: str, port: int) -> None:
        denied.append((host, port))

    await nursery.start(ProxyServer(Allowlist.parse(allow), on_denied, socket_path=sock).run)
    return denied


async def test_bridge_relays_to_the_unix_socket_and_exits_with_the_program(tmp_path: Path) -> None:
    port = _free_port()
    sock = tmp_path / "p.sock"
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            upstream = Upstream()
            await nursery.start(upstream.serve)
            denied = await _proxy(nursery, sock, [f"127.0.0.1:{upstream.port}"])
            env = {**os.environ, "HTTPS_PROXY": f"http://127.0.0.1:{port}"}
            argv = [*BRIDGE, "--unix", str(sock), "--port", str(port), "--", sys.executable, "-c", _CLIENT]
            ok = await trio.run_process([*argv, f"127.0.0.1:{upstream.port}"], env=env, capture_stdout=True)
            assert ok.stdout.decode().strip() == "HTTP/1.1 200 Connection established||HELLO"
            refused = await trio.run_process([*argv, "127.0.0.1:9"], env=env, capture_stdout=True)
            assert refused.stdout.decode().startswith("HTTP/1.1 403 Forbidden|")
            assert denied == [("127.0.0.1", 9)]
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(("script", "code"), [
    ("raise SystemExit(7)", 7),
    ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", -signal.SIGTERM),
])
def test_bridge_exits_as_its_program_did(tmp_path: Path, script: str, code: int) -> None:
    argv = [*BRIDGE, "--unix", str(tmp_path / "none.sock"), "--port", str(_free_port()), "--",
            sys.executable, "-c", script]
    assert subprocess.run(argv, check=False, timeout=30).returncode == code


def test_bridge_usage_errors_and_a_missing_program(tmp_path: Path) -> None:
    bad = subprocess.run([*BRIDGE, "--port", "80", "--", "true"], check=False, capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "options must be --unix and --port" in bad.stderr
    missing = subprocess.run([*BRIDGE, "--unix", "x", "--port", str(_free_port()), "--", "/no/such/program"],
                             check=False, capture_output=True, text=True, timeout=30)
    assert missing.returncode == 127 and "cannot run /no/such/program" in missing.stderr


def test_bridge_forwards_signals_once_to_the_program(tmp_path: Path) -> None:
    """SIGTERM to the bridge reaches the program (which counts what it gets), exactly once."""
    script = textwrap.dedent("""
        import signal, sys, time
        got = []
        signal.signal(signal.SIGTERM, lambda *a: (got.append(1), print("term", flush=True)))
        print("ready", flush=True)
        sys.stdin.readline()
        print(len(got), flush=True)
    """)
    argv = [*BRIDGE, "--unix", str(tmp_path / "none.sock"), "--port", str(_free_port()), "--",
            sys.executable, "-c", script]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                          start_new_session=True) as bridge:
        assert bridge.stdout is not None and bridge.stdin is not None
        assert bridge.stdout.readline().strip() == "ready"
        os.killpg(bridge.pid, signal.SIGTERM)  # as a supervisor does: the whole group
        assert bridge.stdout.readline().strip() == "term"
        bridge.stdin.write("\n")
        bridge.stdin.flush()
        assert bridge.stdout.readline().strip() == "1"
        assert bridge.wait(timeout=30) == 0


def test_bridge_and_program_die_with_the_bridges_parent(tmp_path: Path) -> None:
    parent_script = textwrap.dedent(f"""
        import subprocess, sys
        argv = {BRIDGE!r} + ["--unix", "x", "--port", "{_free_port()}", "--", sys.executable, "-c",
               "import os, time; print(os.getpid(), flush=True); time.sleep(600)"]
        bridge = subprocess.Popen(argv)
        print(bridge.pid, flush=True)
        bridge.wait()
    """)
    with subprocess.Popen([sys.executable, "-c", parent_script], stdout=subprocess.PIPE, text=True) as parent:
        assert parent.stdout is not None
        pids = {int(parent.stdout.readline()), int(parent.stdout.readline())}
        procs = [psutil.Process(pid) for pid in pids]
        parent.kill()
        parent.wait(timeout=30)
        gone, alive = psutil.wait_procs(procs, timeout=30)
        assert alive == [] and len(gone) == 2


async def test_in_bubblewrap_only_the_proxy_is_reachable(tmp_path: Path) -> None:
    """``wrap`` with ``net = "model"``: in its own network namespace a program reaches an allowed
    host through the bridge and the proxy, is refused (403, reported) for any other, and cannot
    reach the host's loopback at all; with ``net = "off"`` not even the proxy."""
    sock_dir = tmp_path / "proxy"
    sock_dir.mkdir()
    sock = sock_dir / "proxy.sock"
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            upstream = Upstream()
            await nursery.start(upstream.serve)
            other = Upstream()
            await nursery.start(other.serve)
            denied = await _proxy(nursery, sock, [f"127.0.0.1:{upstream.port}"])

            async def run(net: NetMode, *args: str) -> str:
                plan = SandboxPlan(cwd=tmp_path, writable=(tmp_path,), net=net,
                                   proxy_socket=sock if net == "model" else None)
                argv, env = wrap([sys.executable, *args], {**os.environ, "NO_PROXY": "127.0.0.1"}, plan)
                if net == "off":
                    env["HTTPS_PROXY"] = f"http://127.0.0.1:{BRIDGE_PORT}"
                done = await trio.run_process(argv, env={k: v for k, v in env.items() if v is not None},
                                              capture_stdout=True)
                return str(done.stdout.decode().strip())

            assert await run("model", "-c", _CLIENT, f"127.0.0.1:{upstream.port}") == \
                "HTTP/1.1 200 Connection established||HELLO"
            assert (await run("model", "-c", _CLIENT, f"127.0.0.1:{other.port}")).startswith(
                "HTTP/1.1 403 Forbidden|")
            assert denied == [("127.0.0.1", other.port)]
            assert await run("model", "-c", _DIRECT, str(other.port)) == "refused 111"
            assert await run("off", "-c", _DIRECT, str(other.port)) == "refused 111"
            assert await run("off", "-c", _DIRECT, str(BRIDGE_PORT)) == "refused 111"
            assert other.connections == 0
            nursery.cancel_scope.cancel()
