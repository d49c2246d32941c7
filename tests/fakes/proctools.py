"""Test helpers for real processes: a subreaper fixture and deadline-bounded death checks."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import trio

from supervisor.proc import prctl
from supervisor.proc import reaper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def subreaper() -> Iterator[None]:
    """Make the test process a child subreaper, as the daemon is; reap leftovers afterwards.

    Without it, orphans are re-parented to PID 1, which in some containers never reaps them.
    """
    was = prctl.is_child_subreaper()
    prctl.set_child_subreaper(True)
    try:
        yield
    finally:
        reaper.reap_orphans()
        prctl.set_child_subreaper(was)


def is_dead(proc: psutil.Process) -> bool:
    """Gone, or a zombie (reaped on the spot if it is an orphan of ours)."""
    try:
        if not proc.is_running():
            return True
        if proc.status() != psutil.STATUS_ZOMBIE:
            return False
        if proc.ppid() == os.getpid():
            reaper.reap_if_orphan(proc.pid)
        return True
    except psutil.NoSuchProcess:
        return True


def processes(pids: list[int]) -> list[psutil.Process]:
    """psutil handles for the pids still present (a handle pins the pid to its start time)."""
    found = []
    for pid in pids:
        try:
            found.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            continue
    return found


async def wait_dead(procs: list[psutil.Process], timeout: float = 10.0) -> list[int]:
    """Poll until every process is dead or ``timeout`` passed; the pids still alive."""
    deadline = trio.current_time() + timeout
    while True:
        alive = [p.pid for p in procs if not is_dead(p)]
        if not alive or trio.current_time() >= deadline:
            return alive
        await trio.sleep(0.01)


async def wait_cmdline(pid: int, wanted: list[str], timeout: float = 10.0) -> list[str]:
    """Poll until ``pid``'s command line ends with ``wanted`` or ``timeout`` passed; the last one
    seen. A spawn returns once ``setpriv`` (``supervisor.proc.deathsig``) is exec'd, a moment
    before it execs the program itself; ``setpriv``'s own command line also ends with ``wanted``,
    so it does not count."""
    deadline = trio.current_time() + timeout
    while True:
        seen = psutil.Process(pid).cmdline()
        exec_done = bool(seen) and Path(seen[0]).name != "setpriv"
        if (exec_done and seen[-len(wanted):] == wanted) or trio.current_time() >= deadline:
            return seen
        await trio.sleep(0.01)


async def wait_no_descendants(timeout: float = 10.0) -> list[psutil.Process]:
    """Poll until this process has no descendants (zombies included); whatever remains."""
    deadline = trio.current_time() + timeout
    while True:
        reaper.reap_orphans()
        left = psutil.Process().children(recursive=True)
        if not left or trio.current_time() >= deadline:
            return left
        await trio.sleep(0.01)


def start_python(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``python -m tests.fakes.procs *args`` from the repository root, stdout piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.procs", *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        env=env,
    )
