"""An empty network namespace for one child: ``empty_net_hook()``, a ``preexec_fn``.

Inside bubblewrap a process has no capabilities, but it may still make a user namespace of its
own and, owned by it, a network namespace: one with only a loopback device, left down. A child
that does so before its exec reaches nothing at all — no TCP or UDP anywhere, not the host's
loopback, not the host's abstract Unix sockets (they belong to a network namespace) — which is
what ``net = "off"`` means for the native agent's bash commands when the worker runs under
bubblewrap (the worker itself keeps the host's network to call its model).

No uid map is written: the child runs as the overflow user in its namespace, so it has no
capability left after its exec, and files it creates still belong to the daemon's user.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

__all__ = ["empty_net_hook", "works"]

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)


def empty_net_hook() -> Callable[[], None]:
    """A ``preexec_fn`` putting the child in an empty network namespace (a user namespace of its
    own around it); a child it cannot put there exits 126 before the exec: never connected."""
    return _hook


def works() -> bool:
    """Whether this process may make such namespaces (checked in a forked child, which exits)."""
    pid = os.fork()
    if pid == 0:
        os._exit(0 if _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _hook() -> None:
    if _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        os._exit(126)
