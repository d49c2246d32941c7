"""The shared process table: one read serves everyone who asked before it began, never earlier askers' stale read."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from supervisor.proc import proctable
from supervisor.proc.proctable import Table, process_table

WAIT = 30.0


class _Scripted:
    """Stands in for the system read: each read returns a new table and may be held open."""

    def __init__(self) -> None:
        self.calls = 0
        self.hold = threading.Event()
        self.entered = threading.Event()

    def __call__(self) -> Table:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            assert self.hold.wait(WAIT)
        return {self.calls: (0, 0)}


class _Watched(threading.Condition):
    """A condition that counts its waiters, so the test knows when a caller is parked."""

    def __init__(self) -> None:
        super().__init__()
        self.parked = threading.Semaphore(0)

    def wait(self, timeout: float | None = None) -> bool:
        self.parked.release()
        return super().wait(timeout)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[_Scripted, _Watched]]:
    read = _Scripted()
    shared = proctable._Shared()
    cond = _Watched()
    shared._cond = cond
    monkeypatch.setattr(proctable, "_read", read)
    monkeypatch.setattr(proctable, "_SHARED", shared)
    yield read, cond
    read.hold.set()


def _ask(results: dict[str, Table], name: str) -> threading.Thread:
    thread = threading.Thread(target=lambda: results.__setitem__(name, process_table()))
    thread.start()
    return thread


def test_callers_during_a_read_share_the_next_one_not_the_running_one(
        scripted: tuple[_Scripted, _Watched]) -> None:
    read, cond = scripted
    results: dict[str, Table] = {}
    first = _ask(results, "first")
    assert read.entered.wait(WAIT)  # the first read is under way, and held
    late = [_ask(results, name) for name in ("second", "third")]
    for _ in late:
        assert cond.parked.acquire(timeout=WAIT)  # both are parked behind it
    read.hold.set()
    for thread in (first, *late):
        thread.join(WAIT)
    assert results["first"] == {1: (0, 0)}
    # Both began asking after read 1 began: they get read 2, one read for the two.
    assert results["second"] is results["third"]
    assert results["second"] == {2: (0, 0)}
    assert read.calls == 2


def test_a_failed_read_is_the_failing_callers_and_the_next_caller_reads_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def flaky() -> Table:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("proc went away")
        return {7: (1, 7)}

    monkeypatch.setattr(proctable, "_read", flaky)
    monkeypatch.setattr(proctable, "_SHARED", proctable._Shared())
    with pytest.raises(OSError):
        process_table()
    assert process_table() == {7: (1, 7)}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_the_real_table_sees_a_process_started_before_the_call() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        table = process_table()
        assert table[child.pid] == (os.getpid(), os.getpgid(0))
        assert table[os.getpid()][1] == os.getpgid(0)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(WAIT)
    assert child.pid not in process_table()  # reaped before this read began


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_many_callers_at_once_cost_fewer_reads_than_callers() -> None:
    before = proctable.reads()
    barrier = threading.Barrier(16)
    tables: list[Table] = []

    def ask() -> None:
        barrier.wait(WAIT)
        tables.append(process_table())

    threads = [threading.Thread(target=ask) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert len(tables) == 16 and all(os.getpid() in table for table in tables)
    assert proctable.reads() - before < 16
