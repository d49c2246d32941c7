"""The daemon's end of one fork request (``protocol.forkserver``): pipes in, a ``Spawned`` out.

``fork_worker`` makes the worker's three pipes, connects to the fork server, sends the request
with the child ends as ``SCM_RIGHTS``, closes the child ends, reads the reply and claims the
pid in the reaper's live table, so the orphan reaper never takes its exit status. The result
has the shape ``supervisor.proc.spawn.spawn`` returns, for ``open_child(spawner=...)``.

``socket_address`` picks where the fork server listens: ``<state>/forkserver.sock``, or an
abstract socket (``@corral-forkserver-<random>``) when that path is too long for ``sun_path``.
"""

from __future__ import annotations

import array
import os
import secrets
import signal
import socket
from collections.abc import Mapping

import msgspec
import trio

from protocol.forkserver import MAX_REPLY, ForkRequest, decode_reply, encode_line
from supervisor.proc import reaper
from supervisor.proc.procstat import read_stat
from supervisor.proc.spawn import Spawned

__all__ = ["ForkFailed", "NoAnswer", "RIVAL_SOCKET_NAME", "SOCKET_NAME", "fork_worker",
           "socket_address"]

SOCKET_NAME = "forkserver.sock"
RIVAL_SOCKET_NAME = "forkserver-rival.sock"
"""Where a normal start listens while it races a background one a spawn waits for (``forkservice``)."""
_SUN_PATH_MAX = 107  # bytes of sun_path before its terminating NUL


class ForkFailed(Exception):
    """The fork server did not give a worker (unreachable, refused, timed out, or garbage)."""


class NoAnswer(ForkFailed):
    """The fork server took the request but did not answer in time (it may be stuck)."""


def socket_address(state_dir: str | os.PathLike[str], name: str = SOCKET_NAME) -> str:
    """``<state_dir>/<name>`` if it fits in ``sun_path``, else a fresh abstract name."""
    path = os.path.join(os.fspath(state_dir), name)
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        return path
    return f"@corral-forkserver-{secrets.token_hex(8)}"


async def fork_worker(address: str, *, cwd: str, env: Mapping[str, str],
                      death_signal: signal.Signals | None, timeout: float) -> Spawned:
    """Ask the server at ``address`` for a worker; ``ForkFailed`` if it gives none in ``timeout``.

    Cancellation: the request is abandoned, and a worker forked for it finds no reader on its
    pipes. A worker that the server reports but that is not our child is killed and refused.
    """
    ours: list[int] = []  # stdin's write end, stdout's and stderr's read ends
    theirs: list[int] = []  # the worker's: stdin's read end, stdout's and stderr's write ends
    try:
        for worker_reads in (True, False, False):
            read, write = os.pipe()
            ours.append(write if worker_reads else read)
            theirs.append(read if worker_reads else write)
        request = ForkRequest(env=dict(env), cwd=cwd,
                              death_signal=death_signal.name if death_signal else None)
        with trio.move_on_after(timeout) as scope:
            pid = await _ask(address, encode_line(request), theirs)
        if scope.cancelled_caught:
            raise NoAnswer(f"no answer within {timeout:g} s")
        for fd in theirs:
            os.close(fd)
        theirs.clear()
        _adopt(pid)
        stdin, stdout, stderr = (trio.lowlevel.FdStream(fd) for fd in ours)
        ours.clear()
        return Spawned(pid, stdin, stdout, stderr)
    finally:
        for fd in ours + theirs:
            os.close(fd)


async def _ask(address: str, line: bytes, fds: list[int]) -> int:
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with sock:
        try:
            await sock.connect(address.replace("@", "\0", 1) if address.startswith("@") else address)
            sent = await sock.sendmsg([line], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                               array.array("i", fds))])
            while sent < len(line):
                sent += await sock.send(line[sent:])
            reply = bytearray()
            while not reply.endswith(b"\n"):
                chunk = await sock.recv(MAX_REPLY)
                if not chunk:
                    raise ForkFailed("the fork server closed the connection without a reply")
                reply += chunk
                if len(reply) > MAX_REPLY:
                    raise ForkFailed("the fork server's reply is too long")
        except OSError as exc:
            raise ForkFailed(f"cannot reach the fork server: {exc}") from exc
    try:
        answer = decode_reply(bytes(reply))
    except msgspec.DecodeError as exc:
        raise ForkFailed(f"unreadable reply from the fork server: {exc}") from exc
    if answer.pid is None:
        raise ForkFailed(f"the fork server refused: {answer.error}")
    return answer.pid


def _adopt(pid: int) -> None:
    """Claim ``pid`` if it is our child and leads its own group; else ``ForkFailed`` (such a
    worker finds that its parent is not the requester and exits by itself)."""
    try:
        stat = read_stat(pid)
        mine = stat.ppid == os.getpid() and stat.pgid == pid
    except (OSError, ValueError):
        mine = False
    if not mine:
        raise ForkFailed(f"the fork server's worker {pid} is not a child of this process")
    reaper.claim(pid)
