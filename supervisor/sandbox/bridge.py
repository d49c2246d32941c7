"""The in-sandbox bridge: ``127.0.0.1:PORT`` inside the sandbox, relayed to the proxy's Unix socket.

A sandbox with ``net = "model"`` has a network namespace of its own: only a loopback device, no
route out. The daemon's allowlist proxy (``supervisor.sandbox.proxy``) listens on a Unix socket
bound into the sandbox; most HTTP clients cannot speak to a Unix-socket proxy, so this bridge
listens on ``127.0.0.1:PORT`` in the sandbox's namespace (``HTTPS_PROXY`` and friends point there)
and relays every connection, byte for byte, to the socket. It decides nothing: the proxy does.

It is the program bubblewrap starts, and it starts the real program as its child::

    python -I -S .../supervisor/sandbox/bridge.py --unix SOCKET --port PORT -- PROGRAM [ARG...]

(``supervisor.sandbox.bwrap.bridge_argv``: run as a file, so neither ``site`` nor a package
``__init__`` is imported.)

The listener is bound before the program starts (so its first connection finds it). The
program runs in a process group of its own; the signals a supervisor sends (TERM, INT, HUP, QUIT,
USR1, USR2, WINCH, CONT) are forwarded to that group exactly once, and the bridge exits with the
program's status (a program killed by a signal kills the bridge with the same signal). Both ask
the kernel for SIGKILL when their parent dies, so neither outlives what started it.

Start-up is on every sandboxed spawn, so this module imports nothing of ours and, of the
standard library, the C modules under ``socket``, ``signal`` and ``threading`` (``_socket``,
``_signal``, ``_thread``: the Python layers above them load ``enum`` and friends, tens of
milliseconds on a busy machine), plus ``ctypes`` for ``prctl``. It relays with two threads per
connection.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # no stub: ``signal`` without its enums
import _socket
import _thread
import os
import sys

TYPE_CHECKING = False  # ``typing`` and ``collections.abc`` cost start-up time: for mypy only
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["main"]

_FORWARDED = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGQUIT, _signal.SIGUSR1,
              _signal.SIGUSR2, _signal.SIGWINCH, _signal.SIGCONT)
_CHUNK = 64 * 1024
_USAGE = "usage: bridge.py --unix SOCKET --port PORT -- PROGRAM [ARG...]"
_BAD_GATEWAY = (b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: 31\r\n"
                b"Connection: close\r\n\r\ncorral's sandbox proxy is gone\n")


def main(argv: list[str]) -> int:
    """Run the bridge; returns only on a usage or start-up error (2, 126/127 as a shell does)."""
    try:
        unix, port, program = _parse(argv)
    except ValueError as exc:
        print(f"corral bridge: {exc}\n{_USAGE}", file=sys.stderr)
        return 2
    _die_with_parent()
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as exc:
        print(f"corral bridge: cannot listen on 127.0.0.1:{port}: {exc.strerror}", file=sys.stderr)
        return 2
    listener.listen(64)
    child = os.fork()
    if child == 0:
        _exec(program)  # never returns
    try:
        os.setpgid(child, child)  # also here, so a signal forwarded before the child's own call finds the group
    except OSError:
        pass  # the child already did (or already exec'd): either way the group exists
    for sig in _FORWARDED:
        _signal.signal(sig, lambda signum, frame: _forward(child, signum))
    _thread.start_new_thread(_accept, (listener, unix))
    _exit_like(_wait(child))
    return 0  # not reached


def _parse(argv: list[str]) -> tuple[str, int, list[str]]:
    if "--" not in argv:
        raise ValueError("no '--' before the program")
    split = argv.index("--")
    options, program = argv[:split], argv[split + 1:]
    if not program:
        raise ValueError("no program after '--'")
    if len(options) % 2:
        raise ValueError(f"an option without a value: {options[-1]}")
    values = dict(zip(options[::2], options[1::2], strict=True))
    if set(values) != {"--unix", "--port"}:
        raise ValueError(f"options must be --unix and --port, got {sorted(values)}")
    if not values["--port"].isdigit() or not 0 < int(values["--port"]) < 65536:
        raise ValueError(f"bad port {values['--port']!r}")
    return values["--unix"], int(values["--port"]), program


def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG(SIGKILL) for this process (the forked program repeats it for itself)."""
    import ctypes  # ~3 ms; only here, after the arguments were found good

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getppid()
    if libc.prctl(1, ctypes.c_ulong(_signal.SIGKILL), 0, 0, 0) != 0 or os.getppid() != parent:
        os.kill(os.getpid(), _signal.SIGKILL)  # our parent is already gone: do not run unowned
    global _prctl
    _prctl = libc.prctl


_prctl: Callable[..., int] | None = None
"""libc's ``prctl``, once ``_die_with_parent`` loaded it (the forked program calls it too)."""


def _exec(program: list[str]) -> None:
    """In the forked child: own process group, die with the bridge, default signals, exec."""
    code = 127
    try:
        os.setpgid(0, 0)
        if _prctl is not None:
            _prctl(1, _signal.SIGKILL, 0, 0, 0)
        for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):
            _signal.signal(sig, _signal.SIG_DFL)  # Python ignores them; the program must not inherit that
        os.execvp(program[0], program)
    except OSError as exc:
        code = 126 if isinstance(exc, PermissionError) else 127
        os.write(2, f"corral bridge: cannot run {program[0]}: {exc.strerror}\n".encode())
    finally:
        os._exit(code)


def _forward(child: int, signum: int) -> None:
    try:
        os.killpg(child, signum)
    except ProcessLookupError:
        try:
            os.kill(child, signum)  # the group is gone, perhaps not the program (it left it)
        except ProcessLookupError:
            pass


def _wait(child: int) -> int:
    while True:
        pid, status = os.waitpid(child, 0)
        if pid == child:
            return os.waitstatus_to_exitcode(status)


def _exit_like(code: int) -> None:
    """Exit as the program did: its exit code, or death by its signal."""
    if code < 0:
        sig = -code
        for forwarded in _FORWARDED:
            _signal.signal(forwarded, _signal.SIG_DFL)
        _signal.signal(sig, _signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal that does not kill (STOP-like): the shell's convention
    os._exit(code)


def _accept(listener: _socket.socket, unix: str) -> None:
    while True:
        try:
            fd, _ = listener._accept()  # type: ignore[attr-defined]  # what socket.accept calls
        except OSError:
            continue  # EMFILE and friends: the program may retry
        _thread.start_new_thread(_relay, (_socket.socket(fileno=fd), unix))


def _relay(client: _socket.socket, unix: str) -> None:
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(unix)
    except OSError:
        try:
            client.sendall(_BAD_GATEWAY)
        except OSError:
            pass
        client.close()
        upstream.close()
        return
    back = _thread.allocate_lock()
    back.acquire()
    _thread.start_new_thread(_pump, (upstream, client, back))
    _pump(client, upstream, None)
    back.acquire()  # the other direction ended too
    client.close()
    upstream.close()


def _pump(src: _socket.socket, dst: _socket.socket, done: _thread.LockType | None) -> None:
    """Copy until EOF, pass the EOF on (half-close); a broken side ends both directions.
    Releases ``done`` at the end, if given."""
    try:
        while data := src.recv(_CHUNK):
            dst.sendall(data)
        dst.shutdown(_socket.SHUT_WR)
    except OSError:
        for sock in (src, dst):
            try:
                sock.shutdown(_socket.SHUT_RDWR)
            except OSError:
                pass
    finally:
        if done is not None:
            done.release()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
