"""Reaping without stealing: the table of children ``ProcessChild`` handles own; the orphan reaper.

A subreaper daemon (``supervisor.proc.prctl.set_child_subreaper``) inherits every orphaned grandchild
of its children; each must be reaped or it stays a zombie. ``waitpid(-1)`` would do that, but it
would also steal the exit status of children that their owners are about to collect. So:

* Every pid spawned by ``supervisor.proc.spawn`` enters the *live table* before the spawner releases
  the table lock, and leaves it only when its ``ProcessChild`` has reaped it. Only the owner
  reaps a live pid.
* ``reap_orphans()`` lists this process's zombie children (``/proc/self/task/*/children``), and
  reaps, one pid at a time with ``waitpid(pid, WNOHANG)``, those not in the live table, under the
  same lock (so a child forked a moment ago cannot be mistaken for an orphan).
* A child forked by another process for us (a fork server's worker, re-parented to this
  subreaper) enters the live table through ``claim`` and is then owned like any other.
* Code that forks *without* ``supervisor.proc.spawn`` (``trio.run_process``, ``subprocess.run``) owns
  pids the table does not know. Its owners reap within microseconds of the exit, so the reaper
  (``run_orphan_reaper``) reaps a zombie only once it has stayed one for a whole grace period:
  a zombie nobody claimed for that long is an orphan. Calling ``reap_orphans()`` directly skips
  that grace and is meant for tests and shutdown.

The reaper does not poll: it scans when ``SIGCHLD`` says a child of ours changed state (the
kernel sends it for an orphan re-parented to us as a zombie, too), at most once per grace
period, and keeps a timer only for a grace period after a scan. An idle daemon is not woken
by it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import threading
from collections.abc import AsyncIterator, Collection, Iterator

import psutil
import trio

from supervisor.proc.procstat import read_stat

_TABLE_LOCK = threading.Lock()
_LIVE: set[int] = set()


def live_pids() -> frozenset[int]:
    """The pids currently owned by a ``ProcessChild`` (spawned, not yet reaped)."""
    with _TABLE_LOCK:
        return frozenset(_LIVE)


@contextlib.contextmanager
def pinned(pid: int) -> Iterator[bool]:
    """Yield whether ``pid`` is a live-table child; if so it cannot be reaped until the block ends.

    An unreaped child's pid, and the group id it leads, name no one else: the block may signal
    them by number. It holds the table lock, so spawns and reaps wait: keep it short.
    """
    with _TABLE_LOCK:
        yield pid in _LIVE


def orphan_zombies() -> set[int]:
    """Zombie children of this process that no ``ProcessChild`` owns."""
    with _TABLE_LOCK:
        return {pid for pid in _zombie_children() if pid not in _LIVE}


def reap_orphans(*, only: Collection[int] | None = None) -> list[int]:
    """Reap zombie children no ``ProcessChild`` owns (only those in ``only`` if given); their pids.

    Never blocks on a live child and never touches a pid in the live table.
    """
    reaped = []
    with _TABLE_LOCK:
        for pid in _zombie_children():
            if pid in _LIVE or (only is not None and pid not in only):
                continue
            if _waitpid_nohang(pid):
                reaped.append(pid)
    return reaped


def reap_if_orphan(pid: int) -> bool:
    """Reap ``pid`` if it is an exited child of ours no ``ProcessChild`` owns; whether it was."""
    with _TABLE_LOCK:
        return pid not in _LIVE and _waitpid_nohang(pid)


async def run_orphan_reaper(
    grace: float = 1.0, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Reap orphaned zombies for good (start it with ``nursery.start``): a scan after a
    ``SIGCHLD``, at most one per ``grace`` seconds (a burst of exits costs two), and a zombie
    no one owns reaped once it stayed one for ``grace`` seconds (see the module docstring). The
    /proc scans run in a worker thread. Cancelling it is safe at any point.

    Signals reach only the main thread's ``trio.run``; elsewhere it scans every ``grace``
    seconds instead.
    """
    with _child_signals() as signals:
        task_status.started()
        while True:
            seen = await trio.to_thread.run_sync(orphan_zombies)
            await trio.sleep(grace)
            if seen:
                await trio.to_thread.run_sync(lambda: reap_orphans(only=seen))
            elif signals is not None:
                await signals.__anext__()  # at once if one came during the sleep


def claim(pid: int) -> None:
    """Enter ``pid``, a child of this process that it did not fork itself, in the live table.

    From then on only its owner reaps it, as for a child of ``supervisor.proc.spawn``. Call it
    as soon as the pid is known: until then a zombie of it may be reaped as an orphan.
    """
    with _TABLE_LOCK:
        _claim(pid)


@contextlib.contextmanager
def _child_signals() -> Iterator[AsyncIterator[int] | None]:
    """``SIGCHLD`` deliveries (coalesced), or None where this thread cannot receive signals."""
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    with trio.open_signal_receiver(signal.SIGCHLD) as signals:
        yield signals


def _claim(pid: int) -> None:
    """Enter ``pid`` in the live table; the caller holds ``_TABLE_LOCK``."""
    _LIVE.add(pid)


def _reap_owned(pid: int) -> bool:
    """Reap live-table ``pid`` (an exited child) and drop it from the table; whether we reaped it.

    False means someone else's ``waitpid(-1)`` took it first; it is dropped from the table anyway.
    """
    with _TABLE_LOCK:
        _LIVE.discard(pid)
        return _waitpid_nohang(pid)


def _waitpid_nohang(pid: int) -> bool:
    try:
        got, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return got == pid


def _zombie_children() -> list[int]:
    # /proc/<pid>/task/<tid>/children needs CONFIG_PROC_CHILDREN; psutil scans all of /proc.
    if not os.path.exists(f"/proc/self/task/{threading.get_native_id()}/children"):
        return _zombie_children_psutil()
    pids: set[int] = set()
    for path in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
        try:
            with open(path, "rb") as f:
                pids.update(int(p) for p in f.read().split())
        except OSError:
            continue
    return [pid for pid in sorted(pids) if _is_zombie(pid)]


def _zombie_children_psutil() -> list[int]:
    zombies = []
    for proc in psutil.Process().children():
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                zombies.append(proc.pid)
        except psutil.Error:
            continue
    return zombies


def _is_zombie(pid: int) -> bool:
    try:
        return read_stat(pid).state == "Z"
    except (OSError, ValueError):
        return False
