"""``netns.empty_net_hook``: a child put in an empty network namespace reaches nothing, not even
a server on the host's loopback, by TCP or UDP; the same child without it does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from supervisor.sandbox import netns

pytestmark = pytest.mark.skipif(not netns.works() and not os.environ.get("CI"),
                                reason="this machine forbids unprivileged user namespaces")

_PROBE = """
import socket, sys
port = int(sys.argv[1])
try:
    socket.create_connection(("127.0.0.1", port), 5).close()
    print("tcp: connected")
except OSError as exc:
    print(f"tcp: {exc.errno}")
try:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.sendto(b"x", ("127.0.0.1", port))
    print("udp: sent")
except OSError as exc:
    print(f"udp: {exc.errno}")
"""


def _probe(port: int, hook: object) -> str:
    done = subprocess.run([sys.executable, "-I", "-c", _PROBE, str(port)], capture_output=True, text=True,
                          timeout=30, check=True, preexec_fn=hook)  # type: ignore[arg-type]
    return done.stdout


def test_a_child_in_an_empty_namespace_reaches_no_loopback_server() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        assert _probe(port, None) == "tcp: connected\nudp: sent\n"
        assert _probe(port, netns.empty_net_hook()) == "tcp: 101\nudp: 101\n"  # ENETUNREACH


def test_the_namespace_works_inside_bubblewrap_too() -> None:
    """The native worker runs under bubblewrap (no capabilities) and still gives each bash
    command its namespace."""
    from supervisor.sandbox.available import bwrap_problem

    if bwrap_problem() is not None:
        pytest.skip(f"no bubblewrap: {bwrap_problem()}") if not os.environ.get("CI") else \
            pytest.fail(f"CI is set but {bwrap_problem()}")
    code = "from supervisor.sandbox import netns; print(netns.works())"
    done = subprocess.run(["bwrap", "--unshare-user", "--unshare-pid", "--cap-drop", "ALL", "--die-with-parent",
                           "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                           "--", sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=30, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.stdout == "True\n", done.stderr
