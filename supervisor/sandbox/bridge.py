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

Start-up is on every sandboxed spawn, so this module imports the standard library only (no
trio, no argparse, nothing of ours) and relays with two threads per connection.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from collections.abc import Callable

__all__ = ["main"]

_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2, signal.SIGWINCH, signal.SIGCONT)
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
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
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
        signal.signal(sig, lambda signum, frame: _forward(child, signum))
    threading.Thread(target=_accept, args=(listener, unix), daemon=True).start()
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
    if libc.prctl(1, ctypes.c_ulong(signal.SIGKILL), 0, 0, 0) != 0 or os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)  # our parent is already gone: do not run unowned
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
            _prctl(1, signal.SIGKILL, 0, 0, 0)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)  # Python ignores them; the program must not inherit that
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
            signal.signal(forwarded, signal.SIG_DFL)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # a signal that does not kill (STOP-like): the shell's convention
    os._exit(code)


def _accept(listener: socket.socket, unix: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            continue  # EMFILE and friends: the program may retry
        threading.Thread(target=_relay, args=(client, unix), daemon=True).start()


def _relay(client: socket.socket, unix: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
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
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy until EOF, pass the EOF on (half-close); a broken side ends both directions."""
    try:
        while data := src.recv(_CHUNK):
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
