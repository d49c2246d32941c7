"""Finding and killing a child's whole family: its process group, its descendants, marked strays.

A child runs in its own session, so one ``killpg`` reaches every process that stayed in its group.
Launcher chains (``npx``, node wrappers, shells) often start helpers that leave the group
(``setsid``, ``detached: true``); those are found by a psutil walk of the leader's descendants,
taken *before* the kill (afterwards the chain is broken and they are re-parented), and by the
environment marker (``CORRAL_CHILD_KEY``) every descendant inherits, which still names the child
after its parent died.

Process identity is psutil's: a ``psutil.Process`` remembers its start time, and signalling one
whose pid was reused raises ``NoSuchProcess`` instead of hitting a stranger. A zombie counts as
dead; if it is an orphan of ours (we are a subreaper) it is reaped on the spot.
"""

from __future__ import annotations

import math
import os
import select
import signal
import time
from collections.abc import Iterable
from typing import Literal

import psutil
import trio

from supervisor.proc import prctl
from supervisor.proc import reaper
from supervisor.proc.proctable import Table, process_table
from supervisor.proc.identity import StartToken, read_marker, same_process, token_of


_SIGNALLED: set[int] = set()


def signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to process group ``pgid``; False if the group is gone or not ours to signal.

    The group is remembered as signalled by us (``was_signalled``) until ``forget_signalled``,
    so a ``ProcessChild`` whose group anyone in the daemon killed reports ``killed``, not
    ``crashed``.
    """
    _SIGNALLED.add(pgid)
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def was_signalled(pgid: int) -> bool:
    """Whether this process sent a signal to group ``pgid`` since it was last forgotten."""
    return pgid in _SIGNALLED


def forget_signalled(pgids: Iterable[int]) -> None:
    """Forget groups that are gone (their leader was reaped), so their ids can be reused."""
    _SIGNALLED.difference_update(pgids)


def kill_now(leader: int, token: StartToken, child_key: str) -> bool:
    """SIGKILL ``leader`` and its family now if it is the process ``token`` names; whether it was.

    The family (``Family``: descendants, members of the group ``leader`` leads, marked strays) is
    surveyed before the kill, and each member is signalled through psutil, which checks its
    identity. The group is signalled by id only while ``leader`` is our unreaped child
    (``reaper.pinned``): the id can name no one else then. Blocking: reads ``/proc``.
    """
    try:
        proc = psutil.Process(leader)
        if not same_process(token, token_of(proc)):
            return False
    except psutil.Error:
        return False
    family = Family(leader, leader, child_key)
    family.survey(leader_alive=True)
    with reaper.pinned(leader) as ours:
        if ours:
            signal_group(leader, signal.SIGKILL)
    signal_all([proc, *family.members], signal.SIGKILL)
    return True


def descendants_in(table: Table, pid: int) -> set[int]:
    """The descendants of ``pid`` according to ``table``."""
    children: dict[int, list[int]] = {}
    for child, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(child)
    found: set[int] = set()
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        if child not in found:
            found.add(child)
            todo += children.get(child, [])
    return found


def marked_in(table: Table, child_key: str) -> set[int]:
    """The pids in ``table`` whose environment marker names ``child_key``.

    As a subreaper the daemon is the parent of every orphan in its tree, so only its own
    children (other than live ``ProcessChild`` leaders) are read; otherwise every process is.
    """
    me = os.getpid()
    if prctl.is_child_subreaper():
        live = reaper.live_pids()
        candidates = [pid for pid, (ppid, _) in table.items() if ppid == me and pid not in live]
    else:
        candidates = [pid for pid in table if pid != me]
    return {pid for pid in candidates if read_marker(pid)[1] == child_key}


def is_alive(proc: psutil.Process) -> bool:
    """Whether ``proc`` still runs (a zombie does not); an orphaned zombie of ours is reaped."""
    try:
        if not proc.is_running():
            return False
        if proc.status() != psutil.STATUS_ZOMBIE:
            return True
        if proc.ppid() == os.getpid():
            reaper.reap_if_orphan(proc.pid)
    except psutil.NoSuchProcess:
        pass
    except psutil.Error:
        return True
    return False


def signal_all(procs: list[psutil.Process], sig: signal.Signals) -> None:
    """Send ``sig`` to each process that is still the process we recorded."""
    for proc in procs:
        try:
            proc.send_signal(sig)
        except psutil.Error:
            continue


async def wait_gone(procs: list[psutil.Process], deadline: float) -> list[psutil.Process]:
    """Wait until every process is dead or ``deadline`` (trio time); return the survivors.

    Each process is watched through a pidfd, which wakes this task at its exit (no polling,
    not even for processes that are not our children); one whose pidfd cannot be opened (out of
    descriptors) is polled. Cancellation: returns nothing, raises ``Cancelled``; nothing is
    left half-done.
    """
    watched, polled = _watch(procs)
    try:
        with trio.move_on_at(deadline):
            for fd in watched:
                await trio.lowlevel.wait_readable(fd)
            await _poll_until_gone(polled, deadline)
    finally:
        for fd in watched:
            os.close(fd)
    return [p for p in procs if is_alive(p)]


def wait_gone_blocking(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """``wait_gone`` for synchronous code (reconcile): the same pidfds, waited on with
    ``poll``; returns the survivors."""
    deadline = time.monotonic() + timeout
    watched, polled = _watch(procs)
    try:
        waiting = select.poll()
        for fd in watched:
            waiting.register(fd, select.POLLIN)
        pending = len(watched)
        while pending and (left := deadline - time.monotonic()) > 0:
            for fd, _ in waiting.poll(math.ceil(left * 1000)):
                waiting.unregister(fd)
                pending -= 1
        delay = 0.005
        while any(is_alive(p) for p in polled) and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.1)
    finally:
        for fd in watched:
            os.close(fd)
    return [p for p in procs if is_alive(p)]


def _watch(procs: list[psutil.Process]) -> tuple[list[int], list[psutil.Process]]:
    """Pidfds of those of ``procs`` that still run, and those that must be polled instead."""
    watched: list[int] = []
    polled: list[psutil.Process] = []
    for proc in procs:
        fd = _pidfd(proc)
        if isinstance(fd, int):
            watched.append(fd)
        elif fd == "poll":
            polled.append(proc)
    return watched, polled


def _pidfd(proc: psutil.Process) -> int | Literal["gone", "poll"]:
    """A pidfd for ``proc`` if it still runs (checked after opening, so a reused pid is never
    watched in its place); ``"gone"`` if it does not; ``"poll"`` if none could be opened."""
    try:
        fd = os.pidfd_open(proc.pid)
    except ProcessLookupError:
        return "gone"
    except OSError:
        return "poll"
    if not is_alive(proc):
        os.close(fd)
        return "gone"
    return fd


async def _poll_until_gone(procs: list[psutil.Process], deadline: float) -> None:
    delay = 0.005
    while any(is_alive(p) for p in procs) and trio.current_time() < deadline:
        await trio.sleep(min(delay, max(0.0, deadline - trio.current_time())))
        delay = min(delay * 2, 0.1)


class Family:
    """The processes that belong to one child besides its leader, gathered by repeated surveys.

    A survey adds, never removes: a process seen once stays a member (by identity) until it is
    dead, so a descendant orphaned between two surveys is still killed.
    """

    def __init__(self, leader: int, pgid: int, child_key: str) -> None:
        self._leader = leader
        self._pgid = pgid
        self._key = child_key
        self._procs: dict[tuple[int, float], psutil.Process] = {}

    @property
    def members(self) -> list[psutil.Process]:
        """Every process seen so far, dead or alive."""
        return list(self._procs.values())

    def survey(self, *, leader_alive: bool) -> None:
        """Add the group's members, the marked processes and (if it runs) the leader's descendants.

        Blocking: reads ``/proc`` for every process (about a millisecond per hundred).
        """
        table = process_table()
        found = {pid for pid, (_, pgid) in table.items() if pgid == self._pgid}
        found |= marked_in(table, self._key)
        if leader_alive:
            found |= descendants_in(table, self._leader)
        found.discard(self._leader)
        for pid in found:
            try:
                proc = psutil.Process(pid)
                self._procs.setdefault((pid, proc.create_time()), proc)
            except psutil.Error:
                continue
