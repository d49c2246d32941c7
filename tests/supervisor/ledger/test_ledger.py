"""The crash ledger: atomic rows, and reconcile against real processes abandoned by a real crash."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import msgspec
from msgspec.structs import replace
import psutil
import pytest
import trio

from protocol.errors import StorageFailed
from supervisor.ledger import store as ledger_module
from supervisor.proc.identity import (
    ENV_CHILD_KEY,
    ENV_STATE_DIR,
    StartToken,
    boot_id,
    real_state_dir,
    start_token,
)
from supervisor.ledger.store import (
    LEDGER_FILE,
    Ledger,
    LedgerRow,
    argv_hash,
    load,
    write,
)
from supervisor.ledger.reconcile import ReconcileReport, reconcile
from supervisor.proc.child import ExitStatus, ProcessSpec, open_child
from tests.fakes.procs import command
from tests.fakes.proctools import is_dead, processes, start_python, subreaper, wait_dead

pytestmark = pytest.mark.usefixtures("subreaper")
assert subreaper  # the fixture is used by name through pytestmark


def row_for(key: str, pid: int, token: StartToken) -> LedgerRow:
    argv = ["sleep", "1000"]
    return LedgerRow(key=key, kind="test", pid=pid, pgid=pid, token=token,
                     argv_hash=argv_hash(argv), argv=argv, started_at=0.0)


@pytest.fixture
def bystanders() -> Iterator[Procs]:
    """Processes a test starts outside corral; killed and reaped afterwards whatever happens."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait()


Procs = list[subprocess.Popen[bytes]]


def sleep_proc(procs: Procs, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(["sleep", "1000"], start_new_session=True, env=env)
    procs.append(proc)
    return proc


async def abandon(state: Path, count: int, mode: str) -> list[int]:
    """Start a stand-in daemon that spawns ``count`` leaders with grandchildren, then SIGKILL it."""
    daemon = start_python("daemon", str(state), str(count), mode)
    assert daemon.stdout is not None
    try:
        line = await trio.to_thread.run_sync(daemon.stdout.readline, abandon_on_cancel=True)
    finally:
        daemon.kill()
        daemon.wait()
        daemon.stdout.close()
    pids: list[int] = json.loads(line)["pids"]
    return pids


async def reconcile_in_fresh_process(state: Path) -> ReconcileReport:
    proc = start_python("reconcile", str(state))
    out, _ = await trio.to_thread.run_sync(proc.communicate, abandon_on_cancel=True)
    assert proc.returncode == 0
    return msgspec.json.decode(out, type=ReconcileReport)


async def test_reconcile_from_a_fresh_process_kills_all_a_crashed_daemon_left(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    with trio.fail_after(60):
        pids = await abandon(state, 4, "mixed")
        family = processes(pids)
        assert len(family) == 16  # 4 leaders, each with 3 grandchildren
        assert [p.pid for p in family if is_dead(p)] == []
        rows, corrupt = load(str(state / LEDGER_FILE))
        assert corrupt is None and len(rows) == 4
        report = await reconcile_in_fresh_process(state)
        assert await wait_dead(family) == []
    assert {k.pid for k in report.killed} == set(pids)
    assert {k.role for k in report.killed} == {"leader", "group", "descendant", "marker"}
    assert {k.key for k in report.killed} == {row.key for row in rows}
    assert report.stale == [] and report.corrupt is None and report.survivors == []
    assert load(str(state / LEDGER_FILE)) == ([], None)


async def test_grandchildren_outlive_a_leader_killed_by_its_parent_death_signal(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    with trio.fail_after(60):
        pids = await abandon(state, 2, "pdeath-kill")
        rows, _ = load(str(state / LEDGER_FILE))
        leaders = processes([row.pid for row in rows])
        grandchildren = processes([pid for pid in pids if pid not in {row.pid for row in rows}])
        assert await wait_dead(leaders) == []  # the daemon's death killed them, and only them
        assert len(grandchildren) == 6 and [p.pid for p in grandchildren if is_dead(p)] == []
        report = await trio.to_thread.run_sync(reconcile, state)
        assert await wait_dead(grandchildren) == []
    assert sorted(r.key for r in report.stale) == sorted(r.key for r in rows)
    assert {k.pid for k in report.killed} == {p.pid for p in grandchildren}
    assert {k.role for k in report.killed} == {"group", "marker"}


async def test_reconcile_spares_what_is_not_ours(tmp_path: Path, bystanders: Procs) -> None:
    state = tmp_path / "state"
    state.mkdir()
    ours = real_state_dir(state)
    reused = sleep_proc(bystanders)
    other_boot = sleep_proc(bystanders)
    other = {**os.environ, ENV_STATE_DIR: str(tmp_path / "other"), ENV_CHILD_KEY: "k3"}
    elsewhere = sleep_proc(bystanders, env=other)
    early = sleep_proc(bystanders, env={**os.environ, ENV_STATE_DIR: ours, ENV_CHILD_KEY: "k4"})
    stray = sleep_proc(bystanders, env={**os.environ, ENV_STATE_DIR: ours, ENV_CHILD_KEY: "k5"})
    # A user's own program, started from a shell that exported the state dir (as the README
    # says to pick one): it names our state dir but was never our child.
    users = sleep_proc(bystanders, env={**os.environ, ENV_STATE_DIR: ours})
    token = start_token(reused.pid)
    assert token.start_ticks is not None
    early_token = start_token(early.pid)
    assert early_token.start_ticks is not None
    gone = subprocess.Popen(["true"])
    gone.wait()
    rows = [
        row_for("k1", reused.pid, replace(token, start_ticks=token.start_ticks - 1)),
        row_for("k2", other_boot.pid, replace(start_token(other_boot.pid), boot_id="another-boot")),
        # The row for k4 names a process that started after ``early``: early is not its descendant.
        row_for("k4", gone.pid, replace(early_token, start_ticks=early_token.start_ticks + 100)),
    ]
    write(str(state / LEDGER_FILE), rows)
    with trio.fail_after(30):
        report = await trio.to_thread.run_sync(reconcile, state)
        assert await wait_dead(processes([stray.pid])) == []
    assert [(k.pid, k.key, k.role) for k in report.killed] == [(stray.pid, "k5", "marker")]
    assert sorted(r.key for r in report.stale) == ["k1", "k2", "k4"]
    for proc in (reused, other_boot, elsewhere, early, users):
        assert proc.poll() is None
    assert load(str(state / LEDGER_FILE)) == ([], None)


async def test_a_live_recorded_child_is_killed_with_its_group(
    tmp_path: Path, bystanders: Procs
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    leader = subprocess.Popen(["sh", "-c", "sleep 1000 & wait"], start_new_session=True)
    bystanders.append(leader)
    handle = psutil.Process(leader.pid)
    with trio.fail_after(30):
        while not (members := handle.children()):
            await trio.sleep(0.01)
        write(str(state / LEDGER_FILE), [row_for("k", leader.pid, start_token(leader.pid))])
        report = await trio.to_thread.run_sync(reconcile, state)
        # Reconcile reaped them: as a subreaper we are their parent (the daemon is, after a crash).
        assert await wait_dead([handle, *members]) == []
    assert sorted((k.pid, k.role, k.argv[0]) for k in report.killed) == sorted(
        [(leader.pid, "leader", "sh"), (members[0].pid, "group", "sleep")]
    )


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\xffnot json",
        b'{"version": 1, "rows": [{"key": "a", "kind"',
        b'{"version": 1, "rows": [{"key": 1}]}',
    ],
    ids=["empty", "garbage", "truncated", "wrong-schema"],
)
async def test_a_corrupt_ledger_is_set_aside_and_reported(tmp_path: Path, content: bytes) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / LEDGER_FILE).write_bytes(content)
    report = await trio.to_thread.run_sync(reconcile, state)
    assert report.corrupt is not None and Path(report.corrupt).read_bytes() == content
    assert Path(report.corrupt).parent == state.resolve()
    assert report.killed == [] and report.stale == []
    assert load(str(state / LEDGER_FILE)) == ([], None)
    (state / LEDGER_FILE).write_bytes(content)
    ledger = Ledger(state)
    await ledger.add(row_for("k", 1, start_token(1)))
    assert [r.key for r in load(ledger.path)[0]] == ["k"]
    assert len(list(state.glob(f"{LEDGER_FILE}.corrupt-*"))) == 2  # reconcile's, then the ledger's


async def test_reconcile_without_a_state_dir_is_a_no_op(tmp_path: Path) -> None:
    report = await trio.to_thread.run_sync(reconcile, tmp_path / "missing")
    assert report == ReconcileReport(killed=[], stale=[], corrupt=None, survivors=[])
    assert not (tmp_path / "missing").exists()


async def test_rows_are_atomic_durable_and_kept_across_instances(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    a, b = row_for("a", 1, start_token(1)), row_for("b", 1, start_token(1))
    await ledger.add(a)
    await ledger.add(b)
    await ledger.add(replace(a, kind="replaced"))
    assert [(r.key, r.kind) for r in load(ledger.path)[0]] == [("a", "replaced"), ("b", "test")]
    await ledger.forget("a")
    await ledger.forget("missing")
    assert load(ledger.path)[0] == [b]
    assert sorted(os.listdir(tmp_path)) == [LEDGER_FILE]
    assert os.stat(ledger.path).st_mode & 0o777 == 0o600


async def test_a_recorded_spawn_is_a_row_with_its_start_token_and_argv_hash(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    pid = os.getpid()
    await ledger.record("k#1", kind="vendor", pid=pid, pgid=os.getpgid(pid), argv=("a", "b c"),
                        started_at=1.5)
    assert load(ledger.path)[0] == ledger.rows() == [LedgerRow(
        key="k#1", kind="vendor", pid=pid, pgid=os.getpgid(pid), token=start_token(pid),
        argv_hash=argv_hash(["a", "b c"]), argv=["a", "b c"], started_at=1.5)]
    await ledger.forget("k#1")
    assert load(ledger.path)[0] == ledger.rows() == []


async def test_concurrent_writes_are_coalesced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(tmp_path)
    writes: list[int] = []

    def counting_write(path: str, rows: list[LedgerRow]) -> None:
        writes.append(len(rows))
        write(path, rows)

    monkeypatch.setattr(ledger_module, "write", counting_write)
    async with trio.open_nursery() as nursery:
        for i in range(50):
            nursery.start_soon(ledger.add, row_for(f"k{i}", 1, start_token(1)))
    assert len(load(ledger.path)[0]) == 50
    assert writes[-1] == 50 and len(writes) < 50


async def test_rows_another_process_left_are_kept_until_reconciled_and_never_reported(
    tmp_path: Path,
) -> None:
    write(str(tmp_path / LEDGER_FILE), [row_for("crashed", 1, start_token(1))])
    ledger = Ledger(tmp_path)
    await ledger.add(row_for("mine", 1, start_token(1)))
    assert [r.key for r in ledger.rows()] == ["mine"]
    assert [r.key for r in load(ledger.path)[0]] == ["crashed", "mine"]
    await ledger.forget("mine")
    assert [r.key for r in load(ledger.path)[0]] == ["crashed"]


async def test_rows_a_crashed_daemon_left_are_gone_once_reconciled(tmp_path: Path) -> None:
    """The daemon builds its ``Ledger`` before it reconciles: the old rows must not come back."""
    write(str(tmp_path / LEDGER_FILE), [row_for("crashed", 1, replace(start_token(1), boot_id="old"))])
    ledger = Ledger(tmp_path)
    report = await trio.to_thread.run_sync(reconcile, tmp_path)
    assert [r.key for r in report.stale] == ["crashed"]
    with trio.fail_after(30):
        async with open_child(ProcessSpec(key="k", argv=["sleep", "1000"], shutdown=0), ledger=ledger):
            assert [r.key for r in load(ledger.path)[0]] == [ledger.rows()[0].key]
    assert load(ledger.path) == ([], None)


async def test_a_cancelled_forget_still_drops_the_row(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    await ledger.add(row_for("k", 1, start_token(1)))
    with trio.CancelScope() as scope:
        scope.cancel()
        await ledger.forget("k")
    assert load(ledger.path) == ([], None)


async def test_a_removal_whose_write_failed_is_written_by_the_next_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(tmp_path)
    await ledger.add(row_for("a", 1, start_token(1)))
    await ledger.add(row_for("b", 1, start_token(1)))

    def failing(path: str, rows: list[LedgerRow]) -> None:
        raise StorageFailed("disk full")

    monkeypatch.setattr(ledger_module, "write", failing)
    with pytest.raises(StorageFailed):
        await ledger.forget("a")
    monkeypatch.setattr(ledger_module, "write", write)
    await ledger.forget("a")  # already gone from memory: the retry is the whole point
    assert [r.key for r in load(ledger.path)[0]] == ["b"]


async def test_constructing_a_ledger_touches_no_file(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "state")
    assert not (tmp_path / "state").exists()
    await ledger.add(row_for("k", 1, start_token(1)))
    assert os.stat(tmp_path / "state").st_mode & 0o777 == 0o700


async def test_kill_recorded_kills_recorded_children_only(tmp_path: Path, bystanders: Procs) -> None:
    ledger = Ledger(tmp_path)
    unrelated = sleep_proc(bystanders)
    token = start_token(unrelated.pid)
    assert token.start_ticks is not None
    other_token = replace(token, start_ticks=token.start_ticks - 1)
    await ledger.add(row_for("unrelated", unrelated.pid, other_token))
    with trio.fail_after(30):
        async with open_child(ProcessSpec(key="k", argv=["sleep", "1000"]), ledger=ledger) as child:
            assert await trio.to_thread.run_sync(ledger.kill_recorded) == [child.pid]
            assert await child.wait() == ExitStatus(reason="killed", signal="SIGKILL")
    assert unrelated.poll() is None
    assert boot_id() == token.boot_id


async def test_kill_recorded_never_signals_a_group_its_leader_does_not_pin(
    tmp_path: Path, bystanders: Procs
) -> None:
    """A live group whose id a row names but whose leader is not that row's process is not hit."""
    ledger = Ledger(tmp_path)
    stranger = sleep_proc(bystanders)  # leads its own group
    gone = subprocess.Popen(["true"])
    gone.wait()
    await ledger.add(replace(row_for("dead", gone.pid, start_token(stranger.pid)), pgid=stranger.pid))
    with trio.fail_after(30):
        spec = ProcessSpec(key="k", argv=["sleep", "1000"])
        async with open_child(spec, ledger=ledger) as child:
            row = next(r for r in ledger.rows() if r.pid == child.pid)
            await ledger.add(replace(row, pgid=stranger.pid))  # a row naming a reused group id
            assert await trio.to_thread.run_sync(ledger.kill_recorded) == [child.pid]
            assert await child.wait() == ExitStatus(reason="killed", signal="SIGKILL")
    assert stranger.poll() is None


async def test_kill_recorded_reaches_descendants_that_left_the_group(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    # Everyone ignores SIGTERM, and the close sequence would wait 60 s before its SIGKILL:
    # whatever dies within seconds was killed by kill_recorded.
    argv = command("sleeper", "--ignore-term", "--stay", "--grandchild", "same",
                   "--grandchild", "setsid", "--grandchild", "orphan")
    spec = ProcessSpec(key="family", argv=argv, shutdown=60)
    with trio.fail_after(30):
        async with open_child(spec, ledger=ledger) as child:
            family = processes(json.loads(await child.receive_frame())["grandchildren"])
            assert len(family) == 3
            assert await trio.to_thread.run_sync(ledger.kill_recorded) == [child.pid]
            assert await wait_dead([psutil.Process(child.pid), *family], timeout=5) == []
    assert child.status == ExitStatus(reason="killed", signal="SIGKILL")


async def test_ledger_writes_are_never_fsynced_and_another_process_reads_them_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger guards against the daemon process dying, which loses no write (module
    docstring): a spawn must not wait for the disk, and another process sees each row as soon
    as ``add`` returns."""
    def no_fsync(fd: int) -> None:
        raise AssertionError("the ledger fsynced")

    monkeypatch.setattr(os, "fsync", no_fsync)
    ledger = Ledger(tmp_path)
    with trio.fail_after(30):
        async with open_child(ProcessSpec(key="nf", argv=["sleep", "1000"], shutdown=1),
                              ledger=ledger) as child:
            seen = subprocess.run(["cat", ledger.path], capture_output=True, check=True).stdout
            assert [row["pid"] for row in json.loads(seen)["rows"]] == [child.pid]
    seen = subprocess.run(["cat", ledger.path], capture_output=True, check=True).stdout
    assert json.loads(seen)["rows"] == []
