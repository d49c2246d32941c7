"""What a sandbox lets a process see and do: ``SandboxPlan``, plain data both backends read.

The model is "everything read-only, some things writable, some things invisible":

* the whole file system is visible read-only (``/`` bound read-only under bubblewrap; read
  rights on ``/`` under Landlock), with a fresh ``/dev`` and ``/proc`` under bubblewrap;
* ``tmp``: a private ``/tmp`` (bubblewrap: an empty tmpfs; Landlock cannot remount, so the
  session's own ``tmp_dir`` is writable and ``TMPDIR`` points to it);
* ``read_only``: paths bound read-only after ``/tmp`` (a harness's runtime under ``/tmp``, a
  masked path's parts the harness must read);
* ``writable``: paths bound read-write, after every read-only bind, so a ``/tmp`` cannot hide
  them (the cwd, the harness's own state, ``extra_rw``);
* ``masked``: paths replaced by an empty directory *after* those binds — a writable cwd that
  holds one does not show it — and before the read-only and writable paths that lie inside
  them are bound again (corral's state directory, with the session's own parts put back);
* ``redirects``: ``(source, destination)`` pairs, bubblewrap only: ``source`` bound writable
  over ``destination``, after the masks and before the protected paths (a worktree's branch
  in a directory of its own, over its ref's directory);
* ``protected``: paths inside writable ones that stay read-only (a repository's hooks and
  config, the refs of other branches);
* ``hidden``: ``deny_read`` — invisible and unreadable, applied last so they win over everything.

``net`` is ``on`` (the host's network namespace), ``off`` (none) or ``model``: under bubblewrap the
session's own namespace, whose only way out is the daemon's proxy listening on
``127.0.0.1:proxy_port`` inside (``sandboxnet``); under Landlock the proxy's own loopback port
``proxy_port``, the one TCP port the rules let the process connect to. ``env`` is applied to the child's environment (``None``
removes a variable).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import msgspec

__all__ = ["BRIDGE_PORT", "NetMode", "SandboxPlan"]

NetMode = Literal["on", "model", "off"]

BRIDGE_PORT = 3128
"""The port the proxy listens on inside a bubblewrap sandbox's network namespace (its own, so
any port is free); under Landlock the daemon picks a free one on the host's loopback."""


class SandboxPlan(msgspec.Struct, kw_only=True, frozen=True):
    """One process tree's confinement; see the module docstring for what each field means.

    Paths are absolute. A path that does not exist is skipped by both backends (nothing there
    to expose, protect or hide).
    """

    cwd: Path
    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()
    redirects: tuple[tuple[Path, Path], ...] = ()
    masked: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    tmp: bool = True
    tmp_dir: Path | None = None
    """Landlock's stand-in for a private ``/tmp``: writable, and ``TMPDIR`` inside points to it."""
    net: NetMode = "on"
    proxy_socket: Path | None = None
    """The session's proxy (``net = "model"``): its Unix socket (neither backend binds it in)."""
    proxy_port: int = BRIDGE_PORT
    env: dict[str, str | None] = {}
    void: Path | None = None
    """An empty file of mode 000 that bubblewrap binds over each hidden *file* (a hidden
    directory gets an empty tmpfs of mode 000); callers create it once (``void_file``)."""


def void_file(directory: Path) -> Path:
    """An empty file of mode 000 in ``directory`` (made once): what a hidden file shows."""
    path = directory / "void"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.touch(mode=0o000)
        path.chmod(0o000)
    return path
