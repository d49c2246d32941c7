"""A sandboxed native session: the worker confines itself before it opens anything.

``confine(confinement)`` enforces the session's plan on the worker with Landlock (file system
only: the worker itself must still reach its model), so the file tools (``read``, ``write``,
``edit``, …) are held by the kernel as well as by their path checks, and every process the
worker starts afterwards inherits the rules. With ``net`` other than ``on`` it returns the
``preexec_fn`` that each bash command gets on top (the TCP rules). Landlock holds the thread
that enforces it and what it starts afterwards: a worker with a second thread already running
is refused (``ConfinementFailed``), never left half confined.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from protocol.native import Confinement
from supervisor.sandbox import SandboxPlan
from supervisor.sandbox import landlock
from supervisor.sandbox.plan import BRIDGE_PORT

__all__ = ["ConfinementFailed", "confine"]


class ConfinementFailed(Exception):
    """The worker could not confine itself as its session asked; it must not run on."""


def confine(confinement: Confinement) -> Callable[[], None] | None:
    """Confine this process per ``confinement``; the bash commands' extra ``preexec_fn`` (for
    ``net`` other than ``on``) or None. Raises ``ConfinementFailed``."""
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        raise ConfinementFailed(f"the worker runs {threads} threads; Landlock would hold only one")
    plan = SandboxPlan(
        cwd=Path(confinement.cwd), read_only=_paths(confinement.read_only),
        writable=_paths(confinement.writable), protected=_paths(confinement.protected),
        masked=_paths(confinement.masked), hidden=_paths(confinement.hidden), tmp=False,
        tmp_dir=Path(confinement.tmp_dir) if confinement.tmp_dir else None)
    if confinement.tmp_dir:
        Path(confinement.tmp_dir).mkdir(mode=0o700, exist_ok=True)
    try:
        shell = None if confinement.net == "on" else landlock.net_hook(confinement.net, BRIDGE_PORT)
        landlock.restrict(plan)
    except OSError as exc:
        raise ConfinementFailed(f"Landlock refused the sandbox: {exc}") from exc
    if confinement.tmp_dir:
        os.environ["TMPDIR"] = confinement.tmp_dir
    return shell


def _paths(items: list[str]) -> tuple[Path, ...]:
    return tuple(Path(item) for item in items)
