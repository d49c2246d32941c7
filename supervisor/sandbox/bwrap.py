"""Bubblewrap: ``wrap(argv, env, plan)`` turns a command into the same command in a sandbox.

Always, whoever the daemon runs as: a new user namespace (``--unshare-user``: root outside is
not root inside, and ``--cap-drop ALL`` leaves ``CapEff`` 0, so the read-only root cannot be
remounted), a new PID and IPC namespace and ``--die-with-parent``. No ``--new-session``: corral's
spawn already starts bubblewrap in a new session without a controlling terminal
(``supervisor.proc.spawn``), and the fresh ``/dev`` shows none of the host's terminals, so nothing
inside can reach a terminal to ``TIOCSTI`` into; bubblewrap's second ``setsid`` (a new scheduler
autogroup) cost up to a few milliseconds a spawn on a loaded machine. Run the result in a new
session. With ``net = "off"`` a
new network namespace too, with ``model`` the session's own (a shared one would expose the
host's abstract Unix sockets).

Mount order matters (later mounts cover earlier ones): ``/`` read-only, ``/dev``, ``/proc``,
the private ``/tmp``, the read-only binds, then the writable binds (so a worktree under ``/tmp``
is not hidden by the tmpfs), then the masks (empty, so a writable cwd that holds corral's
state directory does not show it again), then once more the binds that lie inside a mask (the
session's own parts, a worktree under the worktrees root), then the redirects (a directory
bound writable over another: a worktree's branch's own), the protected paths, and the
hidden paths (``deny_read`` wins over everything); last, the masks are remounted read-only.

For ``net = "model"`` the sandbox joins the session's network namespace instead of making one:
``join`` (``supervisor.sandbox.sandboxnet.SandboxNet.join``) is put in front of bubblewrap, which
then runs without ``--unshare-net``; in that namespace the daemon's proxy already listens on
``127.0.0.1:PORT``, so nothing but the harness starts on the spawn's path and its first connection
finds the proxy. The proxy variables point there.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from supervisor.sandbox.plan import SandboxPlan

__all__ = ["proxy_env", "wrap"]

_PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
_NO_PROXY_VARS = ("NO_PROXY", "no_proxy")


def wrap(argv: Sequence[str], env: Mapping[str, str | None], plan: SandboxPlan,
         *, bwrap: str | None = None, join: Sequence[str] = ()) -> tuple[list[str], dict[str, str | None]]:
    """``argv`` run inside bubblewrap per ``plan``, and ``env`` with the plan's changes.

    ``bwrap`` is the program (default: found on ``PATH``); ``join`` the argv prefix entering the
    session's network namespace, which ``net = "model"`` needs. Paths that do not exist are left
    out. Pure but for ``stat``s of the plan's paths.
    """
    program = bwrap or shutil.which("bwrap") or "bwrap"
    if plan.net == "model" and not join:
        raise ValueError("net = 'model' needs the session's network namespace to join")
    args = [*(join if plan.net == "model" else ()), program, "--unshare-user", "--unshare-pid",
            "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]
    if plan.net == "off":
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if plan.tmp:
        args += ["--tmpfs", "/tmp"]
    masked = _existing(plan.masked)
    args += _binds(plan, _existing(plan.read_only), _existing(plan.writable))
    for path in masked:
        args += ["--tmpfs", str(path)] if path.is_dir() else _void(plan, path)
    args += _binds(plan, [p for p in _existing(plan.read_only) if _beneath(p, masked)],
                   [p for p in _existing(plan.writable) if _beneath(p, masked)])
    for source, destination in plan.redirects:
        if source.is_dir() and destination.is_dir():
            args += ["--bind", str(source), str(destination)]
    for path in _existing(plan.protected):
        args += ["--ro-bind", str(path), str(path)]
    new_env = {**env, **plan.env}
    if plan.net == "model":
        new_env.update(proxy_env(plan.proxy_port))
    for path in _existing(plan.hidden):
        args += ["--perms", "0000", "--tmpfs", str(path)] if path.is_dir() else _void(plan, path)
    for path in masked:  # read-only once every mount inside is made: nothing can be made there
        if path.is_dir():
            args += ["--remount-ro", str(path)]
    args += ["--chdir", str(plan.cwd), "--", *argv]
    return args, new_env


def proxy_env(port: int) -> dict[str, str | None]:
    """The proxy variables (both cases) pointing at ``127.0.0.1:port``; ``NO_PROXY`` cleared."""
    url = f"http://127.0.0.1:{port}"
    found: dict[str, str | None] = {name: url for name in _PROXY_VARS}
    found.update({name: None for name in _NO_PROXY_VARS})
    return found


def _existing(paths: Sequence[Path]) -> list[Path]:
    return [path for path in paths if os.path.lexists(path)]


def _binds(plan: SandboxPlan, read_only: Sequence[Path], writable: Sequence[Path]) -> list[str]:
    """The read-only binds, then the writable ones (so a writable path inside a read-only one
    stays writable)."""
    args: list[str] = []
    for path in read_only:
        args += ["--ro-bind", str(path), str(path)]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    return args


def _beneath(path: Path, masks: Sequence[Path]) -> bool:
    """Whether ``path`` lies inside one of ``masks`` (or is one): bound again after them."""
    return any(path == mask or mask in path.parents for mask in masks)


def _void(plan: SandboxPlan, path: Path) -> list[str]:
    """Cover the file at ``path`` with the plan's unreadable empty file."""
    if plan.void is None:
        raise ValueError(f"hiding the file {path} needs the plan's void file")
    return ["--ro-bind", str(plan.void), str(path)]
