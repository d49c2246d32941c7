"""How a forked child gets its parent-death signal without making every fork slow.

``subprocess`` can set ``PR_SET_PDEATHSIG`` only from a ``preexec_fn``, and any ``preexec_fn``
makes it ``fork`` the whole interpreter and run Python in the child before the exec: 6–9 ms
per spawn in the daemon, against well under 1 ms for the ``vfork`` it uses otherwise. That cost
lands on every terminal an ACP agent opens (one per shell tool call) and on every restart.
util-linux's ``setpriv --pdeathsig`` makes the same request from C and then execs the program,
for about 0.8 ms of exec. So ``launch`` puts ``setpriv`` in front of the argv when it is there
and understands ``--pdeathsig`` (util-linux ≥ 2.33); elsewhere the ``preexec_fn`` does it.

**Exec errors.** ``Popen`` reports a missing or non-executable program as ``OSError`` only for
the program it execs itself. So ``launch`` first looks the program up as the exec would (the
child's ``PATH``, its ``cwd``) and raises the same ``FileNotFoundError``, ``PermissionError`` or
``ENOEXEC`` (a file that is neither ELF nor ``#!``, which ``setpriv``'s ``execvp`` would hand to
``/bin/sh``). A program that vanishes between the look-up and the exec makes ``setpriv`` exit
127 with its message on stderr: a crash, not a launch failure.

**One guarantee is weaker.** The hook also kills the child if the daemon died between the fork
and the ``prctl``; ``setpriv`` cannot check that. The window is one exec (about a millisecond),
and a child left by it carries the environment marker by which the next boot's ``reconcile``
finds and kills it.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import signal
import stat
import subprocess
from collections.abc import Callable, Mapping, Sequence

from supervisor.proc import prctl

__all__ = ["launch", "needs_hook"]


def launch(argv: Sequence[str], cwd: str | None, env: Mapping[str, str],
           sig: signal.Signals | None) -> tuple[list[str], Callable[[], None] | None]:
    """The argv to exec and the ``preexec_fn`` (if any) that give the child ``sig`` when the
    forking thread dies. Raises ``OSError`` as the exec of ``argv[0]`` would (module docstring).
    Blocking (it may stat ``PATH``); called in the spawner thread."""
    if sig is None:
        return list(argv), None
    setpriv = _setpriv()
    if setpriv is None or (cwd is not None and not os.path.isdir(cwd)):
        return list(argv), prctl.parent_death_hook(sig)  # a bad cwd: Popen's chdir reports it
    _check_program(argv[0], cwd, env)
    return [setpriv, f"--pdeathsig={sig.name.removeprefix('SIG')}", "--", *argv], None


def needs_hook(sig: signal.Signals | None) -> bool:
    """Whether ``launch`` would give ``sig`` through a ``preexec_fn`` (a full ``fork``)."""
    return sig is not None and _setpriv() is None


def _check_program(program: str, cwd: str | None, env: Mapping[str, str]) -> None:
    """Raise what ``Popen`` would for exec'ing ``program`` in ``cwd`` with ``env``, if anything:
    like its exec loop, try each candidate in turn, keep the first error other than a missing
    file, and raise it (else ``ENOENT``) when no candidate can be exec'd."""
    base = cwd if cwd is not None else os.getcwd()
    if "/" in program:
        candidates = [os.path.join(base, program)]
    else:
        candidates = [os.path.join(base, directory, program)
                      for directory in os.get_exec_path(dict(env))]
    kept: int | None = None
    for candidate in candidates:
        found = _exec_error(candidate)
        if found is None:
            return
        if kept is None and found not in (errno.ENOENT, errno.ENOTDIR):
            kept = found
    code = errno.ENOENT if kept is None else kept
    raise OSError(code, os.strerror(code), program)  # FileNotFoundError, PermissionError, …


def _exec_error(path: str) -> int | None:
    """The errno the kernel's exec of ``path`` would fail with, or None if it would run it: a
    directory, FIFO, socket or device, or a file without execute permission, is ``EACCES``; an
    executable that is neither ELF nor ``#!`` is ``ENOEXEC`` (``setpriv``'s ``execvp`` would hand
    it to ``/bin/sh`` instead)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return exc.errno
    if not stat.S_ISREG(mode) or not os.access(path, os.X_OK):
        return errno.EACCES
    try:
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError:
        return None  # unreadable but executable: let the exec decide
    if magic != b"\x7fELF" and not magic.startswith(b"#!"):
        return errno.ENOEXEC
    return None


@functools.cache
def _setpriv() -> str | None:
    """The path of a ``setpriv`` that takes ``--pdeathsig``, or None (then the hook is used)."""
    if not prctl.SUPPORTED:
        return None
    found = shutil.which("setpriv")
    if found is None:
        return None
    try:
        usage = subprocess.run([found, "--help"], capture_output=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return found if b"--pdeathsig" in usage else None
