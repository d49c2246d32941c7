"""Which confinement a mode gets here: ``available(mode, ...)`` is the effective backend or why none.

``bwrap`` needs a ``bwrap`` on ``PATH`` that can make a user namespace here (some hosts forbid
unprivileged ones, some containers any); that is checked once by running it (a few ms), and the
verdict is cached per program. With ``net = "model"`` it needs util-linux's ``unshare`` (2.38+:
``--map-current-user``) and ``nsenter`` too, for the session's own network namespace. ``landlock`` needs a kernel with Landlock (ABI ≥ 1), ABI ≥ 4
when the network is confined (TCP rules), and ``[sandbox] landlock`` not turned off. ``auto``
takes bubblewrap where it works, else Landlock. ``off`` is always available.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from typing import Literal

from supervisor.sandbox import landlock
from supervisor.sandbox.plan import NetMode

__all__ = ["Effective", "Mode", "Unavailable", "available", "bwrap_problem", "join_problem", "landlock_problem"]

Mode = Literal["off", "auto", "bwrap", "landlock"]
Effective = Literal["bwrap", "landlock", "off"]


class Unavailable(str):
    """Why a mode cannot be honoured here (a sentence for the ``sandbox_unavailable`` error)."""


def available(mode: Mode, *, net: NetMode = "on", landlock_enabled: bool = True,
              path: str | None = None) -> Effective | Unavailable:
    """The backend ``mode`` resolves to here, or the reason it cannot; blocking (it may run
    ``bwrap`` once). ``path`` is the ``PATH`` to find ``bwrap`` on (default the daemon's)."""
    if mode == "off":
        return "off"
    if mode in ("bwrap", "auto"):
        problem = bwrap_problem(path)
        if problem is None and net == "model":
            problem = join_problem(path)
        if problem is None:
            return "bwrap"
        if mode == "bwrap":
            return Unavailable(problem)
    problem = landlock_problem(net, landlock_enabled)
    if problem is None:
        return "landlock"
    if mode == "auto":
        return Unavailable(f"{bwrap_problem(path)}, and {problem}")
    return Unavailable(problem)


def bwrap_problem(path: str | None = None) -> str | None:
    """Why bubblewrap cannot sandbox here, or None when it can."""
    program = shutil.which("bwrap", path=path)
    if program is None:
        return "bubblewrap (bwrap) is not on PATH"
    return _probe(program)


@functools.cache
def _probe(program: str) -> str | None:
    """Run ``program`` as the sandboxes will (a user namespace, no capabilities) around ``true``."""
    argv = [program, "--unshare-user", "--unshare-pid", "--cap-drop", "ALL", "--die-with-parent",
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap ({program}) does not run: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bubblewrap ({program}) cannot make a sandbox here: {said[-1] if said else done.returncode}"
    return None


def join_problem(path: str | None = None) -> str | None:
    """Why a session's network namespace cannot be made and joined here (``net = "model"`` under
    bubblewrap: ``supervisor.sandbox.sandboxnet``), or None when it can."""
    found = [shutil.which(tool, path=path) for tool in ("unshare", "nsenter")]
    if None in found:
        return "util-linux's unshare and nsenter are not both on PATH"
    return _probe_unshare(str(found[0]))


@functools.cache
def _probe_unshare(program: str) -> str | None:
    argv = [program, "--user", "--map-current-user", "--keep-caps", "--net", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unshare ({program}) does not run: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return f"unshare ({program}) cannot make a network namespace here: {said[-1] if said else done.returncode}"
    return None


def landlock_problem(net: NetMode, enabled: bool) -> str | None:
    """Why Landlock cannot confine a process with ``net`` here, or None when it can."""
    if not enabled:
        return "Landlock is turned off ([sandbox] landlock = false)"
    version = landlock.abi()
    if version < 1:
        return "this kernel has no Landlock"
    if net != "on" and version < 4:
        return f"this kernel's Landlock (ABI {version}) cannot confine the network (ABI 4 needed)"
    return None
