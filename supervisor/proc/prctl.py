"""Linux ``prctl`` knobs the daemon uses to keep its process tree tidy, through ctypes.

* ``set_child_subreaper()``: the daemon becomes a child subreaper (``PR_SET_CHILD_SUBREAPER``), so
  a grandchild whose parent died is re-parented to the daemon instead of to init. The daemon must
  then reap such orphans (``supervisor.proc.reaper``); in exchange it can still find and kill them.
* ``parent_death_hook(sig)``: a ``preexec_fn`` that asks the kernel to send ``sig`` to the child
  when its parent dies (``PR_SET_PDEATHSIG``), so a SIGKILLed daemon does not leave its children
  running until the next boot's reconcile.

The parent-death signal fires when the *thread* that forked the child exits, not the process. trio
forks in a cached worker thread that exits after ten idle seconds, which would kill every child
shortly after it started; so ``supervisor.proc.spawn`` forks from one dedicated thread that lives as
long as the process, and the hook is only used from there. That is what "where that is safe" means
here. Elsewhere than Linux these functions do nothing and report so; the ledger is the backstop.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37

SUPPORTED = sys.platform.startswith("linux")
"""Whether this platform has ``prctl`` (Linux)."""

_libc = ctypes.CDLL(None, use_errno=True) if SUPPORTED else None


def set_child_subreaper(enabled: bool = True) -> bool:
    """Make this process a child subreaper (or stop being one). False where unsupported.

    Raises ``OSError`` if the kernel refuses.
    """
    if _libc is None:
        return False
    _prctl(PR_SET_CHILD_SUBREAPER, 1 if enabled else 0)
    return True


def is_child_subreaper() -> bool:
    """Whether this process is currently a child subreaper."""
    if _libc is None:
        return False
    flag = ctypes.c_int(0)
    _prctl(PR_GET_CHILD_SUBREAPER, ctypes.addressof(flag))
    return flag.value != 0


def parent_death_hook(sig: signal.Signals) -> Callable[[], None] | None:
    """A ``preexec_fn`` giving the child ``sig`` when its parent thread dies; None if unsupported.

    Must be called in the parent (it records the parent's pid). If the parent died between the
    fork and the ``prctl``, the child kills itself with SIGKILL rather than run unowned.
    """
    if _libc is None:
        return None
    parent = os.getpid()

    def hook() -> None:
        _prctl(PR_SET_PDEATHSIG, int(sig))
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def _prctl(option: int, arg: int) -> None:
    if _libc is None:
        raise OSError(0, "prctl is not available on this platform")
    if _libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
