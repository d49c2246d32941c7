"""Bubblewrap: ``wrap(argv, env, plan)`` turns a command into the same command in a sandbox.

Always, whoever the daemon runs as: a new user namespace (``--unshare-user``: root outside is
not root inside, and ``--cap-drop ALL`` leaves ``CapEff`` 0, so the read-only root cannot be
remounted), a new PID and IPC namespace and ``--die-with-parent``. No ``--new-session``: corral's
spawn already starts bubblewrap in a new session without a controlling terminal
(``supervisor.proc.spawn``), and the fresh ``/dev`` shows none of the host's terminals, so nothing
inside can reach a terminal to ``TIOCSTI`` into; bubblewrap's second ``setsid`` cost 3–4 ms a
spawn here (a new scheduler autogroup). Run the result in a new session. With ``net`` other than ``on``, a new network
namespace too (a shared one would expose the host's abstract Unix sockets).

Mount order matters (later mounts cover earlier ones): ``/`` read-only, ``/dev``, ``/proc``,
the private ``/tmp``, the masks, the read-only binds, then the writable binds (so a worktree
under ``/tmp`` is not hidden by the tmpfs), then the protected paths inside them, and the
hidden paths last (``deny_read`` wins over everything).

For ``net = "model"`` the program inside is the bridge (``supervisor.sandbox.bridge``), which
listens on ``127.0.0.1:PORT`` and forwards to the daemon's proxy socket, whose directory is
bound read-only at ``PROXY_DIR_INSIDE`` (inside the private ``/tmp``: ``/`` is read-only, so
bubblewrap could not make a mount point elsewhere); it runs the real program as its child, with the proxy variables set.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from supervisor.sandbox.plan import PROXY_DIR_INSIDE, SandboxPlan

__all__ = ["bridge_argv", "proxy_env", "wrap"]

_BRIDGE = Path(__file__).with_name("bridge.py")
"""Run as a file, isolated and without ``site`` (``-I -S``): it imports the standard library
only, and skipping ``site``, its ``.pth`` files and this package's ``__init__`` saves tens of
milliseconds on every sandboxed spawn."""

_PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
_NO_PROXY_VARS = ("NO_PROXY", "no_proxy")


def wrap(argv: Sequence[str], env: Mapping[str, str | None], plan: SandboxPlan,
         *, bwrap: str | None = None) -> tuple[list[str], dict[str, str | None]]:
    """``argv`` run inside bubblewrap per ``plan``, and ``env`` with the plan's changes.

    ``bwrap`` is the program (default: found on ``PATH``). Paths that do not exist are left out.
    Pure but for ``stat``s of the plan's paths.
    """
    program = bwrap or shutil.which("bwrap") or "bwrap"
    args = [program, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--die-with-parent",
            "--cap-drop", "ALL"]
    if plan.net != "on":
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if plan.tmp:
        args += ["--tmpfs", "/tmp"]
    for path in _existing(plan.masked):
        args += ["--tmpfs", str(path)] if path.is_dir() else _void(plan, path)
    for path in _existing(plan.read_only):
        args += ["--ro-bind", str(path), str(path)]
    for path in _existing(plan.writable):
        args += ["--bind", str(path), str(path)]
    for path in _existing(plan.protected):
        args += ["--ro-bind", str(path), str(path)]
    inner = list(argv)
    new_env = {**env, **plan.env}
    if plan.net == "model":
        if plan.proxy_socket is None:
            raise ValueError("net = 'model' needs the daemon's proxy socket")
        # The socket's directory, read-only (connecting needs no write access to the mount):
        # a restarted proxy's new socket shows up too, and nothing can be created beside it.
        args += ["--ro-bind", str(plan.proxy_socket.parent), PROXY_DIR_INSIDE]
        inside = f"{PROXY_DIR_INSIDE}/{plan.proxy_socket.name}"
        inner = bridge_argv(inside, plan.proxy_port, inner)
        new_env.update(proxy_env(plan.proxy_port))
    for path in _existing(plan.hidden):
        args += ["--perms", "0000", "--tmpfs", str(path)] if path.is_dir() else _void(plan, path)
    args += ["--chdir", str(plan.cwd), "--", *inner]
    return args, new_env


def bridge_argv(socket: str, port: int, argv: Sequence[str]) -> list[str]:
    """The bridge in front of ``argv``: it listens on ``127.0.0.1:port``, forwards to the proxy
    at ``socket`` and runs ``argv`` as its child."""
    return [sys.executable, "-I", "-S", str(_BRIDGE), "--unix", socket, "--port", str(port), "--", *argv]


def proxy_env(port: int) -> dict[str, str | None]:
    """The proxy variables (both cases) pointing at the bridge; ``NO_PROXY`` cleared."""
    url = f"http://127.0.0.1:{port}"
    found: dict[str, str | None] = {name: url for name in _PROXY_VARS}
    found.update({name: None for name in _NO_PROXY_VARS})
    return found


def _existing(paths: Sequence[Path]) -> list[Path]:
    return [path for path in paths if os.path.lexists(path)]


def _void(plan: SandboxPlan, path: Path) -> list[str]:
    """Cover the file at ``path`` with the plan's unreadable empty file."""
    if plan.void is None:
        raise ValueError(f"hiding the file {path} needs the plan's void file")
    return ["--ro-bind", str(plan.void), str(path)]
