"""A session's own network namespace (``make_net``) with the real bubblewrap, util-linux and proxy.

A program run by ``wrap`` with ``net = "model"`` joins the namespace: the daemon's proxy already
listens on ``127.0.0.1:3128`` there, so the program's very first connection reaches it (there is
no relay to wait for); an allowed host answers through it, another is refused (403, reported),
the host's loopback is not reachable at all, and with ``net = "off"`` not even the proxy. The
namespace outlives a restart of the proxy, which serves it again; a maker that cannot make one
is ``NetUnavailable`` with its reason.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
import trio

from supervisor.sandbox import BRIDGE_PORT, SandboxPlan, wrap
from supervisor.sandbox.allowlist import Allowlist
from supervisor.sandbox.available import bwrap_problem, join_problem
from supervisor.sandbox.plan import NetMode
from supervisor.sandbox.proxy import ProxyServer
from supervisor.sandbox.sandboxnet import NetUnavailable, make_net
from tests.supervisor.sandbox.test_proxy import Upstream

_PROBLEM = bwrap_problem() or join_problem()
pytestmark = pytest.mark.skipif(_PROBLEM is not None and not os.environ.get("CI"), reason=f"{_PROBLEM}")

# A client as a sandboxed program would be: it talks to the proxy named by HTTPS_PROXY, at once.
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


async def _run(tmp_path: Path, net: NetMode, join: list[str], *args: str) -> str:
    plan = SandboxPlan(cwd=tmp_path, writable=(tmp_path,), net=net)
    argv, env = wrap([sys.executable, *args], {**os.environ, "NO_PROXY": "127.0.0.1"}, plan,
                     join=join if net == "model" else ())
    if net == "off":
        env["HTTPS_PROXY"] = f"http://127.0.0.1:{BRIDGE_PORT}"
    done = await trio.run_process(argv, env={k: v for k, v in env.items() if v is not None},
                                  capture_stdout=True, start_new_session=True)
    return str(done.stdout.decode().strip())


async def test_in_the_sessions_namespace_only_the_proxy_is_reachable(tmp_path: Path) -> None:
    denied: list[tuple[str, int]] = []

    async def on_denied(host: str, port: int) -> None:
        denied.append((host, port))

    with trio.fail_after(60):
        net = await make_net(tmp_path, BRIDGE_PORT, name="test")
        try:
            async with trio.open_nursery() as nursery:
                upstream, other = Upstream(), Upstream()
                await nursery.start(upstream.serve)
                await nursery.start(other.serve)
                server = ProxyServer(Allowlist.parse([f"127.0.0.1:{upstream.port}"]), on_denied,
                                     socket_path=tmp_path / "proxy.sock")
                server.inside = net.listener
                await nursery.start(server.run)
                join = net.join()
                assert await _run(tmp_path, "model", join, "-c", _CLIENT, f"127.0.0.1:{upstream.port}") == \
                    "HTTP/1.1 200 Connection established||HELLO"
                assert (await _run(tmp_path, "model", join, "-c", _CLIENT, f"127.0.0.1:{other.port}")).startswith(
                    "HTTP/1.1 403 Forbidden|")
                assert denied == [("127.0.0.1", other.port)]
                assert await _run(tmp_path, "model", join, "-c", _DIRECT, str(other.port)) == "refused 111"
                assert await _run(tmp_path, "off", join, "-c", _DIRECT, str(other.port)) == "refused 111"
                assert await _run(tmp_path, "off", join, "-c", _DIRECT, str(BRIDGE_PORT)) == "refused 111"
                assert other.connections == 0
                nursery.cancel_scope.cancel()
        finally:
            net.close()


async def test_the_namespace_outlives_a_proxy_restart(tmp_path: Path) -> None:
    async def ignore(host: str, port: int) -> None:
        pass

    with trio.fail_after(60):
        net = await make_net(tmp_path, BRIDGE_PORT, name="test")
        try:
            async with trio.open_nursery() as outer:
                upstream = Upstream()
                await outer.start(upstream.serve)
                server = ProxyServer(Allowlist.parse([f"127.0.0.1:{upstream.port}"]), ignore,
                                     socket_path=tmp_path / "proxy.sock")
                server.inside = net.listener
                for _ in range(2):  # the first run ends (as a crash would), the second serves again
                    async with trio.open_nursery() as nursery:
                        await nursery.start(server.run)
                        said = await _run(tmp_path, "model", net.join(), "-c", _CLIENT, f"127.0.0.1:{upstream.port}")
                        assert said == "HTTP/1.1 200 Connection established||HELLO"
                        nursery.cancel_scope.cancel()
                outer.cancel_scope.cancel()
        finally:
            net.close()


def test_net_model_without_the_namespace_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="network namespace"):
        wrap(["true"], {}, SandboxPlan(cwd=tmp_path, net="model"))


async def test_a_maker_that_fails_is_net_unavailable_with_its_reason(tmp_path: Path) -> None:
    with trio.fail_after(60), pytest.raises(NetUnavailable, match="maker failed.*corral netmaker: .*port"):
        await make_net(tmp_path, 70000, name="test")  # no such port: its bind fails
    assert list(tmp_path.iterdir()) == []  # its hand-over socket is gone
