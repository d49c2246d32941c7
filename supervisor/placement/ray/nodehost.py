"""What a node agent does to the machine it runs on: take back the raylet's priority, check that a
spawn's cwd and programs are here, and sweep the processes carrying its marker.

Blocking helpers (``/proc``, the file system), kept apart from the agent's actor and its Trio
guest run. Imported only in Ray processes, like the agent.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal

import psutil

from supervisor.proc.killing import signal_all

__all__ = ["missing_here", "raylet_priority", "sweep"]

log = logging.getLogger("corral.placement.agent")


def raylet_priority() -> None:
    """Give every thread of the agent the raylet's scheduling priority, if allowed.

    Ray starts its workers niced (``RAY_worker_niceness``, 15 by default) and the agent's
    children would inherit it: an interactive session's harness, and every hand-off of its
    frames, would yield the CPU to anything else on the node. Linux nices threads, not
    processes, so each thread Ray has started is reniced (later ones inherit it). Raising a
    priority needs ``CAP_SYS_NICE`` (or ``RLIMIT_NICE``); without it the agent keeps Ray's
    (docs/scale-out.md: start the nodes with ``RAY_worker_niceness=0``)."""
    try:
        wanted = os.getpriority(os.PRIO_PROCESS, os.getppid())
        if os.getpriority(os.PRIO_PROCESS, 0) <= wanted:
            return
        for tid in os.listdir("/proc/self/task"):
            os.setpriority(os.PRIO_PROCESS, int(tid), wanted)
    except OSError as exc:
        log.warning("the node agent keeps Ray's worker niceness: %s", exc)


def missing_here(programs: list[str], env: dict[str, str | None], cwd: str | None) -> tuple[str, str] | None:
    """The ``placement.*`` code and what is missing, if the cwd or one of the programs is not here."""
    if cwd is not None and not os.path.isdir(cwd):
        return "placement.cwd_missing", f"cwd {cwd!r} does not exist"
    for program in programs:
        if os.sep in program:
            path = program if cwd is None else os.path.join(cwd, program)
            found = os.access(path, os.X_OK)
        else:
            search = env.get("PATH") or os.environ.get("PATH")
            found = shutil.which(program, path=search) is not None
        if not found:
            return "placement.binary_missing", f"program {program!r} is not found"
    return None


def sweep(marker: dict[str, str], me: int) -> int:
    """SIGKILL every process of this machine carrying ``marker`` but this one; how many.

    Blocking (reads ``/proc``). What it kills: the leftovers of an earlier agent of the node
    (SIGKILLed, so its close sequences never ran) and of this one as it exits.
    """
    marked: list[psutil.Process] = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        with contextlib.suppress(psutil.Error):
            environ = proc.environ()
            if all(environ.get(name) == value for name, value in marker.items()):
                marked.append(proc)
    if marked:
        signal_all(marked, signal.SIGKILL)
    return len(marked)
