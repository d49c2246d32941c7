"""Forking children: one long-lived spawner thread, pipes as trio streams, typed spawn errors.

Why not ``trio.lowlevel.open_process``: it forks in trio's cached worker threads, and those exit
after ten idle seconds. The kernel delivers ``PR_SET_PDEATHSIG`` when the *thread* that forked a
child exits, so a parent-death signal set there would kill healthy children at random. Here every
fork happens in one daemon thread, started on first use and alive until the process exits, which
makes the parent-death signal mean "the daemon died" (how it is set without slowing the fork:
``supervisor.proc.deathsig``). Where that fork is a ``vfork`` (no ``preexec_fn``) and trio runs
in the main thread, which lives as long as the process too, the fork happens there instead: it
blocks the loop for a fraction of a millisecond, less than a hop to another thread costs.
Either thread enters the new pid in the reaper's live table under the table lock, so the orphan
reaper can never mistake it for an orphan.

Exit is observed through a pidfd (``ProcessChild`` does that), and reaping is its job too, so the
``subprocess.Popen`` object is used only to fork and exec: it reports exec failures (a missing
binary, a bad cwd) as ``OSError`` with the errno, which becomes ``LaunchFailed``.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

import trio

from protocol.errors import LaunchFailed
from supervisor.proc import deathsig
from supervisor.proc import reaper

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Spawned:
    """A freshly forked child: its pid (already in the live table) and our ends of its pipes.

    ``popen`` is the ``subprocess.Popen`` that forked it, or ``None`` for a child some other
    process forked for us and the kernel re-parented to this subreaper (``Spawner``).
    """

    pid: int
    stdin: trio.lowlevel.FdStream
    stdout: trio.lowlevel.FdStream
    stderr: trio.lowlevel.FdStream
    popen: subprocess.Popen[bytes] | None = None


class Spawner(Protocol):
    """Anything shaped like ``spawn``: ``open_child(spawner=...)`` takes one.

    The contract is ``spawn``'s: the child leads a new session (its pid is its process group),
    is a child of this process (so its exit can be waited for), runs with exactly ``env`` in
    ``cwd``, has ``death_signal`` as its parent-death signal, and its pid is in the reaper's
    live table (``reaper.claim``) before the call returns; failures are ``LaunchFailed``.
    """

    async def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str],
        death_signal: signal.Signals | None,
    ) -> Spawned: ...


async def spawn(
    argv: Sequence[str],
    *,
    cwd: str | None,
    env: Mapping[str, str],
    death_signal: signal.Signals | None,
    confine: Callable[[], None] | None = None,
) -> Spawned:
    """Fork and exec ``argv`` in a new session with piped stdin/stdout/stderr.

    ``confine`` runs in the child after the fork, before the exec (a sandbox's Landlock
    ruleset: ``supervisor.sandbox.landlock``); it makes the fork a full one, in the spawner
    thread. Raises ``LaunchFailed`` (``data``: errno, strerror, filename, argv0) if the exec or the
    ``cwd`` fails. Not cancellable once the fork is under way: a child must not be left without
    an owner, so cancellation takes effect at the caller's next checkpoint.
    """
    fds: list[int] = []
    try:
        try:
            popen, ours = await _fork_with_pipes(argv, cwd, env, death_signal, fds, confine)
        except OSError as exc:
            raise LaunchFailed(
                f"cannot start {argv[0]!r}: {exc.strerror or exc}",
                data={
                    "errno": exc.errno,
                    "strerror": exc.strerror,
                    "filename": None if exc.filename is None else os.fsdecode(exc.filename),
                    "argv0": argv[0],
                },
            ) from exc
        except subprocess.SubprocessError as exc:
            raise LaunchFailed(f"cannot start {argv[0]!r}: {exc}", data={"argv0": argv[0]}) from exc
        stdin, stdout, stderr = (trio.lowlevel.FdStream(fd) for fd in ours)
        fds.clear()
        return Spawned(popen.pid, stdin, stdout, stderr, popen=popen)
    finally:
        for fd in fds:
            os.close(fd)


async def _fork_with_pipes(
    argv: Sequence[str],
    cwd: str | None,
    env: Mapping[str, str],
    death_signal: signal.Signals | None,
    fds: list[int],
    confine: Callable[[], None] | None = None,
) -> tuple[subprocess.Popen[bytes], tuple[int, int, int]]:
    """Fork with three fresh pipes; close the child's ends here, leave ours in ``fds``."""
    stdin_r, stdin_w = _pipe(fds)
    stdout_r, stdout_w = _pipe(fds)
    stderr_r, stderr_w = _pipe(fds)
    fork = partial(_fork, list(argv), cwd, dict(env), death_signal, (stdin_r, stdout_w, stderr_w),
                   confine)
    if confine is None and _forks_here(death_signal):
        popen = fork()
    else:
        popen = await _in_spawner_thread(fork)
    for fd in (stdin_r, stdout_w, stderr_w):
        fds.remove(fd)
        os.close(fd)
    return popen, (stdin_w, stdout_r, stderr_r)


def _forks_here(death_signal: signal.Signals | None) -> bool:
    """Whether to fork in this thread rather than the spawner thread: when it is the main
    thread (it lives as long as the process, so a parent-death signal means what it should)
    and the fork is a ``vfork`` (no ``preexec_fn``: ``deathsig``), which blocks it for well
    under a millisecond; a thread hop costs more than that on a busy machine."""
    return threading.current_thread() is threading.main_thread() and not deathsig.needs_hook(death_signal)


def _pipe(fds: list[int]) -> tuple[int, int]:
    read, write = os.pipe()
    fds += (read, write)
    return read, write


def _fork(
    argv: list[str],
    cwd: str | None,
    env: dict[str, str],
    death_signal: signal.Signals | None,
    stdio: tuple[int, int, int],
    confine: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    command, hook = deathsig.launch(argv, cwd, env, death_signal)
    if confine is not None:
        hook = _then(hook, confine)
    with reaper._TABLE_LOCK:
        popen = subprocess.Popen(
            command,
            stdin=stdio[0],
            stdout=stdio[1],
            stderr=stdio[2],
            cwd=cwd,
            env=env,
            start_new_session=True,
            preexec_fn=hook,
            close_fds=True,
        )
        reaper._claim(popen.pid)
    return popen


def _then(first: Callable[[], None] | None, second: Callable[[], None]) -> Callable[[], None]:
    """A ``preexec_fn`` running ``first`` (if any), then ``second``."""
    if first is None:
        return second

    def both() -> None:
        first()
        second()

    return both


class _Spawner:
    """One daemon thread that runs fork jobs in order, for the life of the process."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="corral-spawner", daemon=True
                )
                self._thread.start()
        self._jobs.put(job)

    def _run(self) -> None:
        while True:
            self._jobs.get()()


_SPAWNER = _Spawner()


async def _in_spawner_thread(fn: Callable[[], _T]) -> _T:
    token = trio.lowlevel.current_trio_token()
    done = trio.Event()
    results: list[_T] = []
    errors: list[BaseException] = []

    def job() -> None:
        try:
            results.append(fn())
        except BaseException as exc:  # delivered to the caller; the thread must not die
            errors.append(exc)
        token.run_sync_soon(done.set)

    _SPAWNER.submit(job)
    with trio.CancelScope(shield=True):
        await done.wait()
    if errors:
        raise errors[0]
    return results[0]
