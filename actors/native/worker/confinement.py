"""A sandboxed native session: the worker confines itself before it opens anything.

``confine(confinement)`` enforces the session's plan on the worker with Landlock (file system
only: the worker itself must still reach its model), so the file tools (``read``, ``write``,
``edit``, …) are held by the kernel as well as by their path checks, and every process the
worker starts afterwards inherits the rules. With ``net`` other than ``on`` it returns the
``preexec_fn`` that each bash command gets on top (the TCP rules). Landlock holds the thread
that enforces it and what it starts afterwards: a worker with a second thread already running
is refused (``ConfinementFailed``), never left half confined.

Under bubblewrap (``effective = "bwrap"``) the worker was started inside the session's mounts,
which already hold it and everything it starts; the Landlock ruleset is laid on top when
``confinement.landlock``. A bash command with ``net = "off"`` then gets an empty network
namespace of its own (``supervisor.sandbox.netns``: no TCP, UDP nor abstract Unix socket leads
out), with ``model`` the TCP rules as under Landlock (the proxy's loopback port alone).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from protocol.native import Confinement
from supervisor.sandbox import SandboxPlan, landlock, netns

__all__ = ["ConfinementFailed", "confine", "shell_env"]


class ConfinementFailed(Exception):
    """The worker could not confine itself as its session asked; it must not run on."""


def confine(confinement: Confinement) -> Callable[[], None] | None:
    """Confine this process per ``confinement``; the bash commands' extra ``preexec_fn`` (for
    ``net`` other than ``on``) or None. Raises ``ConfinementFailed``."""
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1 and confinement.landlock:
        raise ConfinementFailed(f"the worker runs {threads} threads; Landlock would hold only one")
    plan = SandboxPlan(
        cwd=Path(confinement.cwd), read_only=_paths(confinement.read_only),
        writable=_paths(confinement.writable), protected=_paths(confinement.protected),
        masked=_paths(confinement.masked), hidden=_paths(confinement.hidden), tmp=False,
        tmp_dir=Path(confinement.tmp_dir) if confinement.tmp_dir else None)
    if confinement.tmp_dir:
        Path(confinement.tmp_dir).mkdir(mode=0o700, exist_ok=True)
    if confinement.net == "model" and confinement.proxy_port is None:
        raise ConfinementFailed("net = 'model' without the session's proxy port")
    try:
        shell = _shell_hook(confinement)
        if confinement.landlock:
            landlock.restrict(plan)
    except OSError as exc:
        raise ConfinementFailed(f"Landlock refused the sandbox: {exc}") from exc
    if confinement.tmp_dir:
        os.environ["TMPDIR"] = confinement.tmp_dir
    return shell


def shell_env(confinement: Confinement | None) -> dict[str, str] | None:
    """The environment of bash commands: this process's, with the proxy variables pointing at
    the session's proxy for ``net = "model"`` (``NO_PROXY`` dropped); None (this process's
    as it is) otherwise. The worker's own model calls read no proxy variable."""
    if confinement is None or confinement.net != "model" or confinement.proxy_port is None:
        return None
    url = f"http://127.0.0.1:{confinement.proxy_port}"
    env = {k: v for k, v in os.environ.items() if k not in ("NO_PROXY", "no_proxy")}
    env.update(dict.fromkeys(("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"), url))
    return env


def _shell_hook(confinement: Confinement) -> Callable[[], None] | None:
    """What each bash command gets on top of the worker's own confinement (see the module)."""
    if confinement.net == "on":
        return None
    if confinement.effective == "bwrap" and confinement.net == "off":
        if not netns.works():
            raise ConfinementFailed("bash commands cannot get a network namespace of their own here")
        return netns.empty_net_hook()
    return landlock.net_hook(confinement.net, confinement.proxy_port or 0)


def _paths(items: list[str]) -> tuple[Path, ...]:
    return tuple(Path(item) for item in items)
