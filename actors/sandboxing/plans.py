"""A session's ``SandboxPlan``, from its request, its launch and its settings.

Writable: the cwd (a worktree session's whole worktree, with git's rules: ``gitrules``), the
harness's own state (``profiles``: its home, the native agent's store), ``extra_rw``. Masked
(emptied, then the binds put the session's own parts back): corral's state directory and the
worktrees root, so neither the token nor a session's log or metadata — its own included — nor
another session's worktree is visible, even from a cwd that holds them. Read-only even under
``/tmp`` (which is private): the programs the launch runs (its argv's existing paths,
``PYTHONPATH``, the interpreter and corral's installation) and the files its launch placed in
the session's ``harness/``. Hidden: ``deny_read``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

import msgspec

from actors.harness import HarnessRequest, Launch
from actors.sandboxing.confine import Confined, confine
from actors.sandboxing.gitrules import git_rules
from actors.sandboxing.profiles import session_parts, state_paths
from protocol.confinement import Confinement
from protocol.sandbox import SandboxEffective, SandboxInfo
from supervisor.sandbox import BRIDGE_PORT, SandboxPlan, landlock, void_file

__all__ = ["build_plan", "confine_launch", "confinement_of"]

_CORRAL = Path(__file__).resolve().parents[2]  # the directory holding protocol/, supervisor/, actors/


def build_plan(request: HarnessRequest, launch: Launch, info: SandboxInfo, *, harness: str,
               masks: Iterable[str] = (), proxy_socket: str | None = None) -> SandboxPlan:
    """The plan for ``launch`` of ``request``. Blocking (``git``, ``stat``s): run it in a thread."""
    env: Mapping[str, str] = {**os.environ, **launch.env}
    # the session's cwd (a native worker starts elsewhere); bubblewrap gives the branch its own directory
    rules = git_rules(request.cwd, redirect=info.effective == "bwrap")
    session_cwd = Path(request.cwd)
    root = rules.top if rules.top is not None and rules.writable else session_cwd
    reads, writes = session_parts(harness, Path(request.work_dir).parent)
    writable = _unique([root, *rules.writable, *writes, *state_paths(harness, env),
                        *(Path(p) for p in info.extra_rw)])
    private_tmp = Path(request.work_dir).parent / "tmp"  # made by whoever enforces the plan
    void_dir = Path(request.state_dir or request.work_dir) / "sandbox"
    return SandboxPlan(
        cwd=Path(launch.cwd), writable=tuple(writable), protected=rules.protected, redirects=rules.redirects,
        masked=tuple(_unique(Path(m) for m in masks)),
        read_only=tuple(_unique([*_runtime(launch, env), *rules.readable, *reads])),
        hidden=tuple(_unique(Path(p) for p in info.deny_read)),
        tmp_dir=private_tmp, net=info.net,
        proxy_socket=Path(proxy_socket) if proxy_socket else None,
        proxy_port=request.proxy_port or BRIDGE_PORT,
        void=void_file(void_dir))


def confinement_of(plan: SandboxPlan, *, effective: SandboxEffective = "landlock",
                   landlock_enabled: bool = True) -> Confinement:
    """``plan`` as the native worker's ``start`` carries it: it confines itself with Landlock
    (under bubblewrap too, on top, where the kernel has it and ``landlock_enabled``)."""
    def strings(paths: Iterable[Path]) -> list[str]:
        return [str(path) for path in paths]

    inside: Literal["landlock", "bwrap"] = "bwrap" if effective == "bwrap" else "landlock"
    lays = inside == "landlock" or (landlock_enabled and landlock.abi() >= 1)
    # Inside bubblewrap a redirect's destination is its writable source; the refs bound read-only
    # in it are bubblewrap's to hold (protecting them would leave the directory out of the grant).
    redirected = [destination for _, destination in plan.redirects]
    protected = [path for path in plan.protected if path.parent not in redirected]
    return Confinement(cwd=str(plan.cwd), read_only=strings(plan.read_only),
                       writable=strings([*plan.writable, *redirected]),
                       protected=strings(protected), masked=strings(plan.masked),
                       hidden=strings(plan.hidden), tmp_dir=_tmp_inside(plan, inside),
                       net=plan.net, effective=inside, landlock=lays)


def confine_launch(launch: Launch, request: HarnessRequest, harness: str) -> Confined:
    """``launch`` confined by the request's sandbox, its private ``/tmp`` and writable state parts
    made first (blocking: git, ``stat``s, the ruleset)."""
    sandbox = request.sandbox
    if sandbox is None:
        raise ValueError("no sandbox to confine the launch in")
    plan = build_plan(request, launch, sandbox, harness=harness, masks=request.sandbox_masks,
                      proxy_socket=request.proxy_socket)
    if request.confinement is not None:
        # A native worker calls its model itself: its bubblewrap keeps the host's network, and its
        # bash commands get ``net`` from the worker (``actors.native.worker.confinement``).
        plan = msgspec.structs.replace(plan, net="on", proxy_socket=None)
    if plan.tmp_dir is not None:
        plan.tmp_dir.mkdir(mode=0o700, exist_ok=True)
    for part in session_parts(harness, Path(request.work_dir).parent)[1]:
        part.mkdir(mode=0o700, exist_ok=True)  # bound writable: inside, the rest of the state is masked
    return confine(list(launch.argv), dict(launch.env), plan, sandbox.effective, join=request.proxy_join)


def _tmp_inside(plan: SandboxPlan, inside: str) -> str | None:
    """The worker's temporary directory: bubblewrap's private ``/tmp`` (the session directory
    that holds ``plan.tmp_dir`` is masked in there), else the plan's own."""
    if inside == "bwrap":
        return "/tmp" if plan.tmp else None
    return str(plan.tmp_dir) if plan.tmp_dir else None


def _runtime(launch: Launch, env: Mapping[str, str]) -> list[Path]:
    """What the launch must be able to read wherever it lives: its programs and files named on
    the command line, the interpreter, corral itself, ``PYTHONPATH``."""
    found: list[Path] = [_CORRAL, Path(sys.prefix), Path(os.path.realpath(sys.executable)).parent]
    for item in [*launch.argv, *env.get("PYTHONPATH", "").split(os.pathsep)]:
        if item.startswith("/") and os.path.exists(item):
            real = Path(os.path.realpath(item))
            found.append(real if real.is_dir() else real.parent)
    return found


def _unique(paths: Iterable[Path]) -> list[Path]:
    return list(dict.fromkeys(Path(os.path.realpath(p)) for p in paths))
