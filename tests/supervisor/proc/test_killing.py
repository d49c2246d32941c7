"""``wait_gone`` (the close sequence) and ``wait_gone_blocking`` (reconcile at boot): a family
member's death wakes the waiter through its pidfd, not a poll."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator

import psutil
import pytest
import trio

from supervisor.proc import killing, prctl


def _sleeper(seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts ``is_alive`` calls: a poll makes one per process per round."""
    calls: list[int] = []
    real = killing.is_alive

    def counted(proc: psutil.Process) -> bool:
        calls.append(proc.pid)
        return real(proc)

    monkeypatch.setattr(killing, "is_alive", counted)
    yield calls


Wait = Callable[[list[psutil.Process], float], Awaitable[list[psutil.Process]]]


@pytest.fixture(params=["trio", "blocking"])
def wait(request: pytest.FixtureRequest) -> Wait:
    """``wait_gone`` or ``wait_gone_blocking`` (in a worker thread), with a timeout in seconds."""
    if request.param == "trio":
        return lambda procs, timeout: killing.wait_gone(procs, trio.current_time() + timeout)
    return lambda procs, timeout: trio.to_thread.run_sync(killing.wait_gone_blocking, procs, timeout)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_a_death_wakes_the_wait_without_polling(checks: list[int], wait: Wait) -> None:
    child = _sleeper(0.5)
    proc = psutil.Process(child.pid)
    fds = _open_fds()
    with trio.fail_after(30):
        assert await wait([proc], 30) == []
    # one look when the pidfd is opened, one at the end: none while it ran
    assert checks == [child.pid, child.pid]
    assert _open_fds() == fds
    child.wait()  # already reaped, as the orphan-of-ours zombie it was


async def test_a_process_that_is_not_our_child_wakes_the_wait_too(checks: list[int],
                                                                  wait: Wait) -> None:
    # A helper that left the family's group: its parent (a shell) is gone and we are not a
    # subreaper for the moment, so it is re-parented to someone else.
    was = prctl.is_child_subreaper()
    prctl.set_child_subreaper(False)
    try:
        shell = subprocess.run(
            ["sh", "-c", f"{sys.executable} -c 'import time; time.sleep(0.5)' >/dev/null 2>&1 & echo $!"],
            capture_output=True, check=True)
    finally:
        prctl.set_child_subreaper(was)
    proc = psutil.Process(int(shell.stdout))
    assert proc.ppid() != os.getpid()
    with trio.fail_after(30):
        assert await wait([proc], 30) == []
    assert checks == [proc.pid, proc.pid]


async def test_the_survivors_at_the_deadline_are_returned_and_nothing_leaks(wait: Wait) -> None:
    done, running = _sleeper(0), _sleeper(60)
    try:
        done.wait()
        fds = _open_fds()
        procs = [psutil.Process(running.pid)]
        with trio.fail_after(30):
            survivors = await wait(procs, 0.2)
        assert [p.pid for p in survivors] == [running.pid]
        assert _open_fds() == fds
    finally:
        running.kill()
        running.wait()


async def test_a_process_already_gone_is_not_waited_for(wait: Wait) -> None:
    gone = _sleeper(0)
    proc = psutil.Process(gone.pid)
    gone.wait()
    with trio.fail_after(30):
        assert await wait([proc], 30) == []


async def test_without_pidfds_it_polls(monkeypatch: pytest.MonkeyPatch, checks: list[int],
                                       wait: Wait) -> None:
    def no_descriptors(pid: int, flags: int = 0) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(os, "pidfd_open", no_descriptors)
    child = _sleeper(0.5)
    with trio.fail_after(30):
        assert await wait([psutil.Process(child.pid)], 30) == []
    assert len(checks) > 2  # it looked again and again
    child.wait()
