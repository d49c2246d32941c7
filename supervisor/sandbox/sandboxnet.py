"""A sandbox's own network namespace, made once and joined by every spawn: ``make_net``.

``net = "model"`` under bubblewrap puts the harness in a network namespace whose only way out is
``127.0.0.1:PORT``, served by the daemon's proxy. Making that namespace inside each spawn (with
a relay process listening there before the harness starts) put an interpreter's start-up on
every spawn's critical path. Instead, per session:

1. ``make_net`` runs ``netmaker`` (``supervisor.sandbox.netmaker``) in a fresh user and network
   namespace (util-linux ``unshare``); it brings the loopback up, listens on ``127.0.0.1:PORT``
   and sends the listening socket and handles of both namespaces back over a Unix socket;
2. the daemon holds them (``SandboxNet``): the proxy accepts on the listener itself
   (``ProxyServer.inside``), and the listener keeps the namespace alive;
3. every spawn joins the namespace before bubblewrap starts: ``SandboxNet.join()`` is the argv
   prefix (util-linux ``nsenter`` through the daemon's ``/proc/PID/fd`` entries of the handles),
   and bubblewrap runs without ``--unshare-net``. The listener is there from the start, so the
   harness's first connection is never refused, and a spawn pays two execs (about a millisecond)
   instead of an interpreter's start.

The user namespace maps the daemon's user to itself (``--map-current-user``): bubblewrap, inside
it, makes its own as usual, and the harness sees the same ids as without it.
"""

from __future__ import annotations

import array
import contextlib
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import trio

from supervisor.proc.child import open_child
from supervisor.proc.spec import ProcessSpec
from supervisor.sandbox.available import join_problem

__all__ = ["MAKE_TIMEOUT", "NetUnavailable", "SandboxNet", "make_net"]

MAKE_TIMEOUT = 10.0
"""Seconds ``make_net`` waits for the namespace (an interpreter's start, on a busy machine)."""

_MAKER = Path(__file__).with_name("netmaker.py")


class NetUnavailable(OSError):
    """The namespace could not be made (no util-linux, no user namespaces, the maker failed)."""


class SandboxNet:
    """A namespace the daemon holds: the listener inside it and the handles to join it by."""

    def __init__(self, listener: socket.socket, user: int, net: int, nsenter: str) -> None:
        self.listener = listener
        self._handles = (user, net)
        self._nsenter = nsenter

    def join(self) -> list[str]:
        """The argv prefix that runs a command inside the namespace (with the same user ids)."""
        user, net = (f"/proc/{os.getpid()}/fd/{fd}" for fd in self._handles)
        return [self._nsenter, f"--user={user}", f"--net={net}", "--preserve-credentials", "--"]

    def close(self) -> None:
        """Drop the handles and the listener (the namespace goes with its last process)."""
        for fd in self._handles:
            os.close(fd)
        self._handles = (-1, -1)
        self.listener.close()


async def make_net(directory: Path, port: int, *, name: str = "sandbox") -> SandboxNet:
    """Make a namespace listening on ``127.0.0.1:port`` (``directory``: where the hand-over socket
    goes, briefly, when its path is short enough; else the temporary directory). Raises
    ``NetUnavailable``."""
    problem = join_problem(None)
    if problem is not None:
        raise NetUnavailable(problem)
    unshare, nsenter = shutil.which("unshare"), shutil.which("nsenter")
    assert unshare is not None and nsenter is not None  # join_problem said so
    with contextlib.ExitStack() as stack:
        # A short private directory of its own: a session's directory may be too long a path
        # for a Unix socket (108 bytes), and the maker, in its own user namespace, may not
        # follow this process's ``/proc/PID/fd`` entries.
        where = Path(tempfile.mkdtemp(prefix="corral-net-", dir=directory if _short(directory) else None))
        stack.callback(shutil.rmtree, where, ignore_errors=True)
        path = where / "s"
        server = stack.enter_context(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        try:
            server.bind(os.fspath(path))
        except OSError as exc:
            raise NetUnavailable(f"cannot listen for the namespace maker: {exc}") from exc
        server.listen(1)
        server.setblocking(False)
        argv = [unshare, "--user", "--map-current-user", "--keep-caps", "--net", "--",
                sys.executable, "-I", "-S", str(_MAKER), os.fspath(path), str(port)]
        spec = ProcessSpec(key=f"{name}:netmaker", kind="sandbox-netmaker", argv=argv,
                           env={"PATH": os.environ.get("PATH", "")}, framing="raw", shutdown=1.0)
        async with open_child(spec) as child:
            with trio.move_on_after(MAKE_TIMEOUT) as waited:
                status = await child.wait()  # it exits once it has sent them
            if waited.cancelled_caught:
                raise NetUnavailable(f"the namespace maker did not finish in {MAKE_TIMEOUT:g} s")
            got = _take(server)
            if got is None:
                said = " ".join(child.stderr_tail()).strip()
                raise NetUnavailable(f"the namespace maker failed ({status.reason} "
                                     f"{status.exit_code}): {said or 'no message'}")
    listener, user, net = got
    return SandboxNet(socket.socket(fileno=listener), user, net, nsenter)


def _short(directory: Path) -> bool:
    """Whether a socket in a new directory in ``directory`` fits ``sun_path`` (with room)."""
    return len(os.fsencode(directory)) < 80


def _take(server: socket.socket) -> tuple[int, int, int] | None:
    """The three descriptors the maker sent before it exited (its connection is queued), or
    None when it sent none."""
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return None
    fds = array.array("i")
    with conn:
        conn.setblocking(False)
        try:
            _, ancillary, _, _ = conn.recvmsg(1, socket.CMSG_SPACE(3 * fds.itemsize))
        except BlockingIOError:
            return None
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return None
    return fds[0], fds[1], fds[2]
