"""``python -m actors.native.forkserver ADDRESS [--background]``: the native fork server, a
pre-imported template.

A native worker spends most of its start-up importing ADK and the model SDKs (1.5–2 s idle, far
more under load), and its first turn importing and building more. The template does both once
(``PRELOAD``, then ``warmup.warm_up``: a scripted turn per provider), then forks one worker per
request, which starts with everything imported and built. ADDRESS is the path of its Unix
socket, or ``@NAME`` for an abstract one; the wire is ``protocol.forkserver``.

Theory of operation.

* Start: remember the signal dispositions Python started with, bind the socket (a bad address
  fails before seconds of imports; a path gets mode 0600, and lives in the daemon's 0700 state
  directory), import ``PRELOAD``, run the warm-up turns (their event loop is closed after
  them), check that the process is still single-threaded (forking a threaded process copies
  locks held by threads that do not exist in the child), ``gc.collect(); gc.freeze()`` (the
  collector then never touches, so never copies, the template's objects in a worker), listen,
  print the ready line. With ``--background`` (the daemon's prewarm) the imports and the
  warm-up run in a thread of low CPU priority (``BACKGROUND_NICE``), joined before the rest:
  Linux nice values belong to threads, and a forked child inherits the forking thread's, so
  the main thread, which forks every worker, keeps its own and the workers do not run at the
  low priority. (A nice value cannot be lowered again without privilege: a daemon that needs
  the server before it is ready starts a normal one beside it, ``forkservice``.)
* Serve, synchronously, one connection at a time, until stdin ends (the daemon's goodbye) or a
  signal ends the process. A peer of another uid is refused (``SO_PEERCRED``; that is the only
  guard of an abstract socket).
* Fork, twice: the intermediate forks the worker and exits at once, so the worker is re-parented
  to the nearest subreaper, the daemon, which can then wait for it like any child. The worker's
  first act is ``setsid()`` (its own group, which the daemon signals as a whole); only then does
  it report its pid, and the server answers after it has also reaped the intermediate, so the
  answer names a group leader that is already the requester's child.
* Become the worker: the three descriptors become 0, 1 and 2 and every other one is closed (the
  listening socket above all), the environment is replaced by the request's, the signal
  dispositions and mask are those Python started with, the cwd is the request's. It waits
  (bounded) until the intermediate is gone, checks that its parent is the requester, asks for
  its parent-death signal if the request names one (checking the parent again), then runs
  ``actors.native.worker.main.main()`` and leaves with ``os._exit`` (the template's ``atexit``
  handlers are not the worker's, as in ``multiprocessing``'s forked children).

``/proc/<pid>/environ`` of a worker shows the template's environment block (the kernel's copy
from the template's exec), not the request's: its ``CORRAL_CHILD_KEY`` marker names the fork
server. What the worker runs inherits the request's environment, with the worker's own marker.
"""

from __future__ import annotations

import array
import gc
import importlib
import os
import select
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType
from typing import Any

import msgspec

from protocol.forkserver import (
    MAX_REQUEST,
    ForkReply,
    ForkRequest,
    ForkServerReady,
    decode_request,
    encode_line,
)
from supervisor.proc.prctl import set_parent_death_signal

__all__ = ["BACKGROUND_NICE", "PRELOAD", "main"]

PRELOAD = (
    "google.adk.runners",
    "google.adk.agents",
    "google.genai",
    "openai",
    "anthropic",
    "actors.native.worker.main",
    "actors.native.worker.handler",
    "actors.native.models.openai_responses",
    "actors.native.models.openai_chat",
    "actors.native.models.anthropic_messages",
    "actors.native.models.gemini",
)
"""What the template imports before it forks: the worker and everything any provider needs."""

BACKGROUND_NICE = 10
"""The nice value of the thread that imports and warms up in a ``--background`` start."""

_REQUEST_TIMEOUT = 10.0  # seconds a client gets to send its request
_REPORT_TIMEOUT = 10.0  # seconds a new worker gets to report its pid
_REPARENT_TIMEOUT = 10.0  # seconds a worker waits for the intermediate to be gone
_WORKER_FAILED = 70  # the worker's exit code when it could not become a worker
_THREADS_WAIT = 15.0  # seconds the template waits for threads left behind before it gives up

Handlers = dict[signal.Signals, Callable[[int, FrameType | None], Any] | int]


class _Refused(Exception):
    """A request the server answers with an error."""


def main(argv: list[str] | None = None) -> int:
    """Import, listen, print the ready line, then serve until stdin ends."""
    args = list(sys.argv[1:] if argv is None else argv)
    background = "--background" in args
    if background:
        args.remove("--background")
    if len(args) != 1:
        print("usage: python -m actors.native.forkserver ADDRESS [--background]", file=sys.stderr)
        return 2
    startup = _dispositions()
    listener, bound = _bind(args[0])  # first: a bad address fails before seconds of imports
    try:
        warmed = _prepare(BACKGROUND_NICE if background else 0)
        threads = _threads_left(time.monotonic() + _THREADS_WAIT)
        if threading.active_count() != 1 or threads != 1:
            print(f"fork server: the imports started threads ({threads}); forking is unsafe",
                  file=sys.stderr)
            return 3
        gc.collect()
        gc.freeze()
        listener.listen(64)
        sys.stdout.buffer.write(encode_line(ForkServerReady(pid=os.getpid(), address=args[0],
                                                            warmed=warmed)))
        sys.stdout.flush()
        _serve(listener, startup)
    finally:
        listener.close()
        _unlink(args[0], bound)
    return 0


def _prepare(nice: int) -> list[str]:
    """Import ``PRELOAD`` and warm up; the provider kinds whose turn went well. With ``nice``,
    in a thread of that nice value (see the module docstring)."""
    if not nice:
        return _import_and_warm_up()
    done: list[list[str]] = []
    failed: list[BaseException] = []

    def low() -> None:
        try:
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
            except OSError as exc:  # a policy that forbids it: warm up anyway
                print(f"fork server: cannot lower the warm-up's priority: {exc}", file=sys.stderr)
            done.append(_import_and_warm_up())
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=low, name="corral-fork-server-warm-up")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


def _import_and_warm_up() -> list[str]:
    for name in PRELOAD:
        importlib.import_module(name)
    from actors.native.forkserver.warmup import warm_up

    return warm_up()


def _threads_left(deadline: float) -> int:
    """The OS threads of this process once the Python threads an import or the warm-up left
    behind ended, waited for until ``deadline`` (a warm-up turn that timed out on a loaded
    machine can leave a worker that winds down by itself a little later)."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    if not os.path.isdir("/proc/self/task"):
        return 1
    # A joined thread's OS thread leaves /proc a moment after join returns; the kernel says
    # nothing when it does, so look again briefly.
    while (threads := len(os.listdir("/proc/self/task"))) > threading.active_count():
        if time.monotonic() >= deadline:
            break
        time.sleep(0.001)
    return threads


def _bind(address: str) -> tuple[socket.socket, int | None]:
    """Bind (not listen yet); the inode of a path socket (to unlink only our own at exit)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if address.startswith("@"):
        listener.bind("\0" + address[1:])
        return listener, None
    try:
        os.unlink(address)  # left by a fork server that died
    except FileNotFoundError:
        pass
    mask = os.umask(0o177)
    try:
        listener.bind(address)
    finally:
        os.umask(mask)
    os.chmod(address, 0o600)
    return listener, os.stat(address).st_ino


def _unlink(address: str, inode: int | None) -> None:
    if inode is None:
        return
    try:
        if os.stat(address).st_ino == inode:
            os.unlink(address)
    except OSError:
        pass


def _serve(listener: socket.socket, startup: Handlers) -> None:
    poller = select.poll()
    poller.register(0, select.POLLIN)
    poller.register(listener.fileno(), select.POLLIN)
    while True:
        for fd, _ in poller.poll():
            if fd == 0:
                if not os.read(0, 4096):
                    return  # the daemon closed our stdin: its goodbye
                continue
            conn, _ = listener.accept()
            with conn:
                _answer(listener, conn, startup)


def _answer(listener: socket.socket, conn: socket.socket, startup: Handlers) -> None:
    """Serve one connection: read the request, fork, reply; every failure is an error reply."""
    fds: list[int] = []
    try:
        conn.settimeout(_REQUEST_TIMEOUT)
        owner, uid, _ = struct.unpack("3i", conn.getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        if uid != os.getuid():
            raise _Refused(f"uid {uid} may not ask this server for workers")
        request = _receive(conn, fds)
        if len(fds) != 3:
            raise _Refused(f"a request carries 3 descriptors, not {len(fds)}")
        reply = ForkReply(pid=_fork(request, fds, owner, [listener, conn], startup))
    except (_Refused, OSError, msgspec.DecodeError) as exc:
        reply = ForkReply(error=f"{type(exc).__name__}: {exc}")
    finally:
        for fd in fds:
            os.close(fd)
    try:
        conn.sendall(encode_line(reply))
    except OSError:
        pass  # the requester gave up; a worker it never heard of finds no parent and exits


def _receive(conn: socket.socket, fds: list[int]) -> ForkRequest:
    """One request line; the descriptors that came with it are appended to ``fds``."""
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk, ancillary, flags, _ = conn.recvmsg(65536, socket.CMSG_SPACE(4 * 4))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                received = array.array("i")
                received.frombytes(payload[: len(payload) - len(payload) % received.itemsize])
                fds.extend(received)
        if flags & socket.MSG_CTRUNC:
            raise _Refused("too many descriptors")
        if not chunk:
            raise _Refused("the request ended before its newline")
        data += chunk
        if len(data) > MAX_REQUEST:
            raise _Refused(f"the request is over {MAX_REQUEST} bytes")
    return decode_request(bytes(data))


def _fork(request: ForkRequest, fds: list[int], owner: int, inherited: list[socket.socket],
          startup: Handlers) -> int:
    """Double-fork a worker; its pid once it leads its own group and the intermediate is reaped."""
    report_r, report_w = os.pipe()
    try:
        middle = os.fork()
        if middle == 0:
            _intermediate(request, fds, owner, inherited, startup, report_r, report_w)
        os.close(report_w)
        report_w = -1
        _, status = os.waitpid(middle, 0)
        ready, _, _ = select.select([report_r], [], [], _REPORT_TIMEOUT)
        data = os.read(report_r, 64) if ready else b""
    finally:
        os.close(report_r)
        if report_w >= 0:
            os.close(report_w)
    if not data:
        raise _Refused(f"the worker did not start (intermediate wait status {status})")
    return int(data)


def _intermediate(request: ForkRequest, fds: list[int], owner: int,
                  inherited: list[socket.socket], startup: Handlers, report_r: int,
                  report_w: int) -> None:
    code = 1
    try:
        os.close(report_r)
        middle = os.getpid()
        if os.fork() == 0:
            _worker(request, fds, owner, inherited, startup, report_w, middle)
        code = 0
    finally:
        os._exit(code)


def _worker(request: ForkRequest, fds: list[int], owner: int, inherited: list[socket.socket],
            startup: Handlers, report_w: int, middle: int) -> None:
    """Become the worker (see the module docstring); never returns."""
    code = _WORKER_FAILED
    try:
        os.setsid()
        os.write(report_w, str(os.getpid()).encode())
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for sock in inherited:
            sock.detach()  # closed just below; the objects must never close those numbers again
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        _restore(startup)
        os.environ.clear()
        os.environ.update(request.env)
        tempfile.tempdir = None  # both read from the environment once, and cached
        time.tzset()
        os.chdir(request.cwd)
        _wait_reparented(middle, owner)
        if request.death_signal is not None:
            if not set_parent_death_signal(signal.Signals[request.death_signal], owner):
                raise _Refused("the requester died before the parent-death signal was set")
        from actors.native.worker.main import main as worker_main

        code = worker_main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else _WORKER_FAILED
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _wait_reparented(middle: int, owner: int) -> None:
    """Wait until the intermediate has exited (so we are re-parented); check the new parent."""
    if os.getppid() == middle:
        try:
            pidfd = os.pidfd_open(middle)
        except ProcessLookupError:
            pidfd = -1  # already reaped, so already gone
        if pidfd >= 0:
            try:
                if os.getppid() == middle:
                    poller = select.poll()
                    poller.register(pidfd, select.POLLIN)
                    poller.poll(int(_REPARENT_TIMEOUT * 1000))
            finally:
                os.close(pidfd)
    parent = os.getppid()
    if parent != owner:
        raise _Refused(f"re-parented to {parent}, not to the requester {owner} "
                       "(is it a child subreaper?)")


def _dispositions() -> Handlers:
    """The signal handlers Python started with (those set from C read as ``None``: skipped)."""
    found: Handlers = {}
    for sig in signal.valid_signals():
        if isinstance(sig, signal.Signals) and sig not in (signal.SIGKILL, signal.SIGSTOP):
            handler = signal.getsignal(sig)
            if handler is not None:
                found[sig] = handler
    return found


def _restore(startup: Handlers) -> None:
    for sig, handler in startup.items():
        if signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())

