"""Makes a sandbox's network namespace and hands it to the daemon: run as a file, never imported.

``net = "model"`` under bubblewrap: the session's harness runs in a network namespace with only a
loopback device, where ``127.0.0.1:PORT`` leads to the daemon's proxy. This program is started
(once per session, before the harness) inside a fresh user and network namespace::

    unshare --user --map-current-user --keep-caps --net -- \\
        python -I -S .../supervisor/sandbox/netmaker.py SOCKET PORT

It brings the loopback device up, listens on ``127.0.0.1:PORT`` there, and sends the daemon,
over the Unix socket ``SOCKET`` (``SCM_RIGHTS``), the listening socket and handles of its two
namespaces, then exits. The daemon's proxy accepts on that socket itself (no relay process); the
handles let every spawn join the namespace (``nsenter``) with the listener already there, so a
harness's first connection can never be refused; the listener keeps the namespace alive.

Imports only the standard library's C modules it needs (``supervisor.sandbox.sandboxnet`` runs it).
"""

from __future__ import annotations

import _socket
import fcntl
import os
import sys

_SIOCSIFFLAGS = 0x8914
_IFF_UP, _IFF_LOOPBACK, _IFF_RUNNING = 0x1, 0x8, 0x40


def main(argv: list[str]) -> int:
    """Make, hand over, exit 0; 2 on a usage error, 1 when the namespace cannot be made."""
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: netmaker.py SOCKET PORT", file=sys.stderr)
        return 2
    path, port = argv[0], int(argv[1])
    try:
        probe = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
        ifreq = b"lo".ljust(16, b"\0") + (_IFF_UP | _IFF_LOOPBACK | _IFF_RUNNING).to_bytes(2, "little")
        fcntl.ioctl(probe.fileno(), _SIOCSIFFLAGS, ifreq.ljust(40, b"\0"))
        probe.close()
        listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        handles = [os.open(f"/proc/self/ns/{name}", os.O_RDONLY | os.O_CLOEXEC) for name in ("user", "net")]
        daemon = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        daemon.connect(path)
        fds = [listener.fileno(), *handles]
        daemon.sendmsg([b"N"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, bytes(_int_array(fds)))])
        daemon.close()  # the descriptors in flight stay open until the daemon receives them
    except (OSError, OverflowError) as exc:  # OverflowError: a port over 65535
        print(f"corral netmaker: {exc}", file=sys.stderr)
        return 1
    return 0


def _int_array(values: list[int]) -> bytearray:
    data = bytearray()
    for value in values:
        data += value.to_bytes(4, sys.byteorder, signed=True)
    return data


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
