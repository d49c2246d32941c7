"""The fork server's background start: when it happens (virtual time); a real one, warming up
in a thread of low priority, raced by a normal start when a spawn waits for it, whose forked
worker keeps normal priority (real processes)."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
import trio
import trio.testing

from actors.native.forkserver.server import BACKGROUND_NICE
from actors.native.daemon.forkservice import ForkServer
from supervisor.ledger.store import Ledger
from supervisor.proc.child import open_child
from tests.fakes.proctools import subreaper, wait_no_descendants

from .test_forkserver import TIMEOUT, worker_spec
from .test_worker_process import ROOT

assert subreaper  # used by name below


class _Recorded(ForkServer):
    """A fork server whose process is not started: each start is recorded (time, background)."""

    def __init__(self, state: Path, prewarm: float | None) -> None:
        super().__init__(state, None, cwd=str(ROOT), prewarm=prewarm)
        self.starts: list[tuple[float, bool]] = []

    async def _serve(self, run: object) -> None:
        self.starts.append((trio.current_time(), getattr(run, "background")))
        await trio.sleep_forever()


async def test_a_prewarmed_fork_server_starts_in_the_background_after_its_delay(
        autojump_clock: trio.testing.MockClock, tmp_path: Path) -> None:
    forks = _Recorded(tmp_path, prewarm=3.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(forks.run)
        await trio.sleep(2.9)
        assert forks.starts == [] and not forks.warming
        await trio.sleep(60)
        assert forks.starts == [(3.0, True)]
        assert forks.warming  # daemon.status says so while it starts
        nursery.cancel_scope.cancel()


async def test_without_prewarm_the_fork_server_waits_for_demand(
        autojump_clock: trio.testing.MockClock, tmp_path: Path) -> None:
    forks = _Recorded(tmp_path, prewarm=None)
    async with trio.open_nursery() as nursery:
        await nursery.start(forks.run)
        await trio.sleep(3600)
        assert forks.starts == [] and not forks.warming
        nursery.cancel_scope.cancel()


@pytest.mark.usefixtures("subreaper")
async def test_a_spawn_during_a_background_start_races_a_normal_one_and_keeps_normal_priority(
        tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    ledger = Ledger(state)
    forks = ForkServer(state, ledger, cwd=str(ROOT), prewarm=0.0)
    with trio.fail_after(TIMEOUT):
        async with trio.open_nursery() as nursery:
            await nursery.start(forks.child_spec().start)
            template = await _low_thread_of()
            assert "--background" in template.cmdline()
            async with open_child(worker_spec(), ledger=ledger, spawner=forks.spawn) as child:
                stats = forks.statistics()
                assert (stats.forks, stats.fallbacks, stats.rivals) == (1, 0, 1)
                assert os.getpriority(os.PRIO_PROCESS, child.pid) == 0
                assert psutil.Process(child.pid).ppid() == os.getpid()
            # whichever of the two was ready first serves, and the other is gone
            assert stats.pid is not None and os.getpriority(os.PRIO_PROCESS, stats.pid) == 0
            assert await wait_templates() == [stats.pid]
            nursery.cancel_scope.cancel()
    assert await wait_no_descendants() == []


async def wait_templates() -> list[int]:
    """The fork server processes, once there is only one left (a loser closes in seconds)."""
    while len(found := [p.pid for p in psutil.Process().children()
                        if "actors.native.forkserver" in " ".join(_cmdline(p))]) > 1:
        await trio.sleep(0.05)
    return found


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.NoSuchProcess:
        return []


async def _low_thread_of() -> psutil.Process:
    """The fork server process once a thread of it runs at ``BACKGROUND_NICE`` (its warm-up)."""
    while True:
        for proc in psutil.Process().children():
            try:
                if "actors.native.forkserver" not in " ".join(proc.cmdline()):
                    continue
                if any(t.id != proc.pid and os.getpriority(os.PRIO_PROCESS, t.id) == BACKGROUND_NICE
                       for t in proc.threads()):
                    return proc
            except (psutil.NoSuchProcess, ProcessLookupError):
                continue
        await trio.sleep(0.01)
