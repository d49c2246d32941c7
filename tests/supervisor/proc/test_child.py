"""OS-process children against real processes: frames, exits, the close sequence, no leftovers."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import psutil
import pytest
import trio
import trio.testing

from protocol.errors import ChildExited, FrameTooLarge, LaunchFailed, StorageFailed
from supervisor.proc import deathsig, reaper
from supervisor.proc.identity import read_marker, same_process, start_token
from supervisor.proc.spawn import Spawned, spawn
from supervisor.ledger.store import Ledger, argv_hash
from supervisor.proc.child import ExitStatus, ProcessSpec, open_child, run_child
from tests.fakes.procs import command
from tests.fakes.proctools import ROOT, processes, subreaper, wait_dead, wait_no_descendants

pytestmark = pytest.mark.usefixtures("subreaper")
assert subreaper  # the fixture is used by name through pytestmark


@pytest.fixture(params=["setpriv", "preexec"])
def death_mechanism(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each way a child gets its parent-death signal (``supervisor.proc.deathsig``): through
    ``setpriv`` where it is installed, else through a ``preexec_fn``."""
    if request.param == "preexec":
        monkeypatch.setattr(deathsig, "_setpriv", lambda: None)
    elif deathsig._setpriv() is None:
        if os.environ.get("CI"):
            pytest.fail("setpriv with --pdeathsig is not installed, and CI must test it")
        pytest.skip("setpriv with --pdeathsig is not installed")
    return str(request.param)

ALL_GRANDCHILDREN = ["--grandchild", "same", "--grandchild", "setsid", "--grandchild", "orphan"]


def sleeper(*args: str) -> list[str]:
    return command("sleeper", *args)


async def test_frames_stdin_stderr_and_ledger_row(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="corral.child")
    ledger = Ledger(tmp_path)
    spec = ProcessSpec(key="echo", kind="test", argv=command("echo"), shutdown=5)
    with trio.fail_after(30):
        async with open_child(spec, ledger=ledger) as child:
            (row,) = msgspec.json.decode(Path(ledger.path).read_bytes())["rows"]
            assert (row["key"], row["kind"], row["pid"], row["pgid"]) == (
                child.ledger_key, "test", child.pid, child.pid,
            )
            assert row["argv"] == spec.argv and row["argv_hash"] == argv_hash(spec.argv)
            assert os.getpgid(child.pid) == child.pgid
            token = msgspec.convert(row["token"], type=type(start_token(child.pid)))
            assert same_process(token, start_token(child.pid))
            assert read_marker(child.pid) == (ledger.state_dir, child.ledger_key)
            await child.send(b'{"n": 1}\n{"n": 2}\n')
            assert [await child.receive_frame(), await child.receive_frame()] == [
                b'{"n": 1}', b'{"n": 2}',
            ]
            status = await child.close()
            with pytest.raises(trio.EndOfChannel):
                await child.receive_frame()
    assert status == ExitStatus(reason="exited", exit_code=0)
    assert status.ok
    assert child.stderr_tail() == ["got 8 bytes", "got 8 bytes"]
    assert any("got 8 bytes" in r.getMessage() for r in caplog.records if r.name == "corral.child")
    assert ledger.rows() == []
    assert msgspec.json.decode(Path(ledger.path).read_bytes())["rows"] == []
    assert not psutil.pid_exists(child.pid)
    assert sorted(os.listdir(tmp_path)) == ["ledger.json"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (command("exit", "3"), ExitStatus(reason="exited", exit_code=3)),
        (command("die", "SIGUSR1"), ExitStatus(reason="crashed", signal="SIGUSR1")),
    ],
)
async def test_exit_status_of_a_child_that_ends_by_itself(
    argv: list[str], expected: ExitStatus
) -> None:
    with trio.fail_after(30):
        async with open_child(ProcessSpec(key="x", argv=argv)) as child:
            assert await child.wait() == expected
            assert await child.close() == expected
    assert not expected.ok


async def test_env_overrides_and_unset() -> None:
    os.environ["CORRAL_TEST_UNSET_ME"] = "1"
    try:
        script = (
            "import os, json;"
            "print(json.dumps([os.environ.get('A'), 'CORRAL_TEST_UNSET_ME' in os.environ]))"
        )
        env = {"A": "b", "CORRAL_TEST_UNSET_ME": None}
        spec = ProcessSpec(key="env", argv=[sys.executable, "-c", script], env=env)
        with trio.fail_after(30):
            async with open_child(spec) as child:
                assert json.loads(await child.receive_frame()) == ["b", False]
    finally:
        del os.environ["CORRAL_TEST_UNSET_ME"]


async def test_child_ignoring_sigterm_is_killed_within_its_bound() -> None:
    spec = ProcessSpec(key="stubborn", argv=sleeper("--ignore-term", "--stay"), shutdown=1.0)
    with trio.fail_after(30):
        async with open_child(spec) as child:
            await child.receive_frame()
            start = trio.current_time()
            status = await child.close()
            elapsed = trio.current_time() - start
    assert status == ExitStatus(reason="killed", signal="SIGKILL")
    assert 0.9 <= elapsed < 2.0
    assert await wait_dead(processes([child.pid]), timeout=1) == []


async def test_close_sequence_phases_in_virtual_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # No fail_after here: under the autojump clock its deadline would fire while we wait for the
    # real child; pytest-timeout bounds the test instead. Half of the shutdown time goes to the
    # goodbye, the rest to SIGTERM, then SIGKILL: a child that ignores both takes exactly 10 s.
    spec = ProcessSpec(key="stubborn", argv=sleeper("--ignore-term", "--stay"), shutdown=10.0)
    async with open_child(spec) as child:
        await child.receive_frame()
        start = trio.current_time()
        status = await child.close()
        assert trio.current_time() - start == 10.0
    assert status == ExitStatus(reason="killed", signal="SIGKILL")


async def test_sigterm_ends_a_child_that_honours_it_before_the_kill() -> None:
    spec = ProcessSpec(key="polite", argv=["sleep", "1000"], shutdown=4.0)
    with trio.fail_after(30):
        async with open_child(spec) as child:
            start = trio.current_time()
            status = await child.close()
    assert status == ExitStatus(reason="killed", signal="SIGTERM")
    # Half the shutdown time for the goodbye (sleep ignores its stdin), then SIGTERM works at once.
    assert 1.9 <= trio.current_time() - start < 3.0


async def test_brutal_kill_with_zero_shutdown() -> None:
    with trio.fail_after(30):
        async with open_child(ProcessSpec(key="b", argv=["sleep", "1000"], shutdown=0)) as child:
            status = await child.close()
    assert status == ExitStatus(reason="killed", signal="SIGKILL")


async def test_grandchildren_in_the_group_in_a_new_session_and_orphaned_are_killed() -> None:
    argv = sleeper("--ignore-term", "--stay", *ALL_GRANDCHILDREN)
    spec = ProcessSpec(key="family", argv=argv, shutdown=1)
    with trio.fail_after(30):
        async with open_child(spec) as child:
            hello = json.loads(await child.receive_frame())
            family = processes(hello["grandchildren"])
            assert len(family) == 3
            orphan = family[2]
            assert orphan.ppid() == os.getpid()  # re-parented to us, the subreaper
            assert os.getsid(family[1].pid) != os.getsid(child.pid)
    assert await wait_dead(family, timeout=1) == []
    assert await wait_no_descendants(timeout=5) == []


async def test_a_grandchild_that_left_the_group_gets_sigterm_with_it() -> None:
    """Without the SIGTERM it would be waited for until the whole grace is spent, then killed."""
    spec = ProcessSpec(key="detached", argv=sleeper("--stay", "--grandchild", "setsid"), shutdown=20)
    with trio.fail_after(30):
        async with open_child(spec) as child:
            family = processes(json.loads(await child.receive_frame())["grandchildren"])
            start = trio.current_time()
            os.kill(child.pid, signal.SIGKILL)  # a crash: the close sequence cleans up after it
            await child.wait()
            assert trio.current_time() - start < 5
            assert await wait_dead(family, timeout=1) == []


LAUNCHERS = {
    "node": [
        "node", "-e",
        "const cp = require('child_process');"
        "const a = cp.spawn('sleep', ['1000'], {detached: true, stdio: 'ignore'});"
        "const b = cp.spawn('sleep', ['1000'], {stdio: 'ignore'});"
        "console.log(JSON.stringify({grandchildren: [a.pid, b.pid]}));"
        "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000);",
    ],
    "sh": [
        "sh", "-c",
        "trap '' TERM; sleep 1000 & a=$!; setsid sleep 1000 & b=$!;"
        " echo \"{\\\"grandchildren\\\": [$a, $b]}\"; wait",
    ],
}


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
async def test_launcher_chain_leaves_no_grandchild(launcher: str) -> None:
    if shutil.which(launcher) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{launcher} is not installed, and CI must test it")
        pytest.skip(f"{launcher} is not installed")
    with trio.fail_after(30):
        spec = ProcessSpec(key=launcher, argv=LAUNCHERS[launcher], shutdown=1)
        async with open_child(spec) as child:
            family = processes(json.loads(await child.receive_frame())["grandchildren"])
            assert len(family) == 2
    assert child.status == ExitStatus(reason="killed", signal="SIGKILL")
    assert await wait_dead(family, timeout=1) == []
    assert await wait_no_descendants(timeout=5) == []


async def test_stdout_flood_past_the_frame_limit_is_a_protocol_error() -> None:
    me = psutil.Process()
    before = me.memory_info().rss
    spec = ProcessSpec(key="flood", argv=command("flood"), frame_limit=4 << 20, shutdown=2)
    with trio.fail_after(30):
        async with open_child(spec) as child:
            with pytest.raises(FrameTooLarge) as caught:
                async for _ in child.frames():
                    pass
            assert caught.value.data is not None
            assert caught.value.data["limit"] == 4 << 20 < caught.value.data["length"]
            status = await child.wait()
    assert isinstance(child.failure, FrameTooLarge)
    assert status.reason == "killed"
    assert me.memory_info().rss - before < 64 << 20


async def test_torn_final_frame_is_a_protocol_error() -> None:
    spec = ProcessSpec(key="torn", argv=["printf", '{"a": 1}\n{"b"'])
    with trio.fail_after(30):
        async with open_child(spec) as child:
            assert await child.receive_frame() == b'{"a": 1}'
            with pytest.raises(Exception) as caught:
                await child.receive_frame()
            assert type(caught.value).__name__ == "ProtocolError"


@pytest.mark.parametrize(
    ("argv", "cwd", "code"),
    [
        (["/nonexistent/corral-no-such-binary"], None, errno.ENOENT),
        (["sleep", "1"], "/nonexistent-dir", errno.ENOENT),
        (["{tmp}/not-executable"], None, errno.EACCES),
        (["not-executable"], None, errno.EACCES),  # found on PATH, but not executable
        (["corral-no-such-binary"], None, errno.ENOENT),
        (["./not-executable"], "{tmp}", errno.EACCES),  # relative to the child's cwd
        (["{tmp}"], None, errno.EACCES),  # a directory
        (["{tmp}/no-format"], None, errno.ENOEXEC),  # executable, but neither ELF nor #!
        (["{tmp}/fifo"], None, errno.EACCES),  # a FIFO (a socket or a device is the same)
        (["fifo"], None, errno.EACCES),  # found on PATH, but a FIFO
        (["subdir"], None, errno.EACCES),  # a directory found on PATH
    ],
)
async def test_launch_failure_is_typed(
    tmp_path: Path, argv: list[str], cwd: str | None, code: int, death_mechanism: str
) -> None:
    (tmp_path / "not-executable").write_text("#!/bin/sh\n")
    (tmp_path / "not-executable").chmod(0o644)
    (tmp_path / "no-format").write_text("echo hi\n")
    (tmp_path / "no-format").chmod(0o755)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "subdir").mkdir()
    argv = [a.format(tmp=tmp_path) for a in argv]
    cwd = None if cwd is None else cwd.format(tmp=tmp_path)
    ledger = Ledger(tmp_path / "state")
    env = {"PATH": f"{tmp_path}:{os.environ['PATH']}"}
    with trio.fail_after(30), pytest.raises(LaunchFailed) as caught:
        async with open_child(ProcessSpec(key="missing", argv=argv, cwd=cwd, env=env), ledger=ledger):
            pytest.fail("the block must not run")
    assert caught.value.data is not None
    assert caught.value.data["errno"] == code
    assert caught.value.data["strerror"] == os.strerror(code)
    assert caught.value.data["argv0"] == argv[0]
    assert ledger.rows() == [] and not os.path.exists(ledger.path)
    assert await wait_no_descendants(timeout=1) == []


class _Recorder:
    """A ``SpawnRecorder`` that is not the crash ledger: what the child tells it, in memory."""

    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    async def record(self, key: str, *, kind: str, pid: int, pgid: int, argv: Sequence[str],
                     started_at: float) -> None:
        self.calls.append(("record", key, {"kind": kind, "pid": pid, "pgid": pgid,
                                           "argv": list(argv), "started_at": started_at}))

    async def forget(self, key: str) -> None:
        self.calls.append(("forget", key, {}))


async def test_any_spawn_recorder_is_told_of_the_spawn_and_the_reap(tmp_path: Path) -> None:
    recorder = _Recorder(str(tmp_path))
    spec = ProcessSpec(key="sleepy", kind="test", argv=["sleep", "1000"], shutdown=0)
    with trio.fail_after(30):
        async with open_child(spec, ledger=recorder) as child:
            assert recorder.calls == [("record", child.ledger_key, {
                "kind": "test", "pid": child.pid, "pgid": child.pgid, "argv": spec.argv,
                "started_at": child.started_at})]
            assert read_marker(child.pid) == (str(tmp_path), child.ledger_key)
    assert recorder.calls[1:] == [("forget", child.ledger_key, {})]


async def test_ledger_write_failure_kills_and_reaps_the_child(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    os.mkdir(ledger.path)  # os.replace onto a directory fails
    with trio.fail_after(30), pytest.raises(StorageFailed):
        async with open_child(ProcessSpec(key="x", argv=["sleep", "1000"]), ledger=ledger):
            pytest.fail("the block must not run")
    assert reaper.live_pids() == frozenset()
    assert await wait_no_descendants(timeout=5) == []


async def test_body_exception_propagates_unwrapped_and_the_child_is_closed() -> None:
    with trio.fail_after(30), pytest.raises(KeyError):
        async with open_child(ProcessSpec(key="x", argv=["sleep", "1000"], shutdown=1)) as child:
            raise KeyError("boom")
    assert child.status == ExitStatus(reason="killed", signal="SIGTERM")


async def test_cancelling_run_child_closes_the_child(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            child = await nursery.start(
                run_child, ProcessSpec(key="r", argv=["sleep", "1000"], shutdown=1), ledger
            )
            assert [row.pid for row in ledger.rows()] == [child.pid]
            nursery.cancel_scope.cancel()
    assert child.status == ExitStatus(reason="killed", signal="SIGTERM")
    assert ledger.rows() == []


async def test_send_after_exit_is_child_exited() -> None:
    with trio.fail_after(30):
        async with open_child(ProcessSpec(key="k", argv=["sleep", "1000"])) as child:
            os.kill(child.pid, signal.SIGKILL)
            assert await child.wait() == ExitStatus(reason="crashed", signal="SIGKILL")
            with pytest.raises(ChildExited):
                await child.send(b"late\n")


async def test_send_nowait_writes_what_the_pipe_takes_now() -> None:
    """A node agent's fast path: bytes to a reading child at once; to one that does not read,
    what fits in the pipe (the rest is the caller's); none once the child is gone."""
    with trio.fail_after(30):
        async with open_child(ProcessSpec(key="c", argv=["cat"])) as child:
            assert child.send_nowait(b"one\n") == 4
            assert await child.receive_frame() == b"one"
        async with open_child(ProcessSpec(key="s", argv=["sleep", "1000"], shutdown=0)) as child:
            data = b"x" * (4 * 1024 * 1024)
            written = child.send_nowait(data)
            assert 0 < written < len(data)
            assert child.send_nowait(data) == 0  # full: nothing more until it reads
            os.kill(child.pid, signal.SIGKILL)
            await child.wait()
            with pytest.raises(ChildExited):
                child.send_nowait(b"late\n")


async def test_parent_death_signal_is_set_from_the_long_lived_spawner_thread(
    death_mechanism: str,
) -> None:
    script = (  # PR_GET_PDEATHSIG (2) reads the calling process's parent-death signal
        "import ctypes, json, os, sys; sig = ctypes.c_int(0);"
        "ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0);"
        "print(json.dumps([sig.value, sys.argv[1:], os.getppid()]))"
    )
    with trio.fail_after(30):
        for death, expected in [("SIGTERM", signal.SIGTERM), ("SIGKILL", signal.SIGKILL), (None, 0)]:
            spec = ProcessSpec(key="pd", argv=[sys.executable, "-c", script, "a b", "--"],
                               death_signal=death)
            async with open_child(spec) as child:
                # the signal is set, the argv is the program's own (no trace of setpriv), and
                # the child is ours
                assert json.loads(await child.receive_frame()) == [expected, ["a b", "--"], os.getpid()]


async def test_orphan_reaper_never_takes_a_live_childs_status() -> None:
    with trio.fail_after(30):
        argv = [sys.executable, "-c", "raise SystemExit(7)"]
        spawned = await spawn(argv, cwd=None, env=dict(os.environ), death_signal=None)
        proc = psutil.Process(spawned.pid)
        while proc.status() != psutil.STATUS_ZOMBIE:
            await trio.sleep(0.01)
        assert reaper.orphan_zombies() == set()
        assert reaper.reap_orphans() == []
        assert os.waitid(os.P_PID, spawned.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        assert reaper._reap_owned(spawned.pid)
        spawned.popen.returncode = 7
        for stream in (spawned.stdin, spawned.stdout, spawned.stderr):
            stream.close()


async def test_the_orphan_reaper_reaps_an_orphan_once_its_sigchld_comes() -> None:
    spec = ProcessSpec(key="o", argv=sleeper("--stay", "--grandchild", "orphan"), shutdown=1)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(reaper.run_orphan_reaper, 0.02)
            async with open_child(spec) as child:
                (orphan,) = json.loads(await child.receive_frame())["grandchildren"]
                os.kill(orphan, signal.SIGKILL)
                while psutil.pid_exists(orphan):
                    await trio.sleep(0.01)
                assert await child.close() == ExitStatus(reason="killed", signal="SIGTERM")
            nursery.cancel_scope.cancel()


async def test_the_orphan_reaper_does_not_poll_an_idle_process(
        autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch) -> None:
    # An hour of quiet: one scan at the start, none after; a SIGCHLD brings exactly one more.
    # The scans run inline: a real thread would let the virtual clock run past them.
    scans: list[float] = []

    async def inline(fn: Callable[[], Any]) -> Any:
        await trio.lowlevel.checkpoint()
        return fn()

    def scan() -> set[int]:
        scans.append(trio.current_time())
        return set()

    monkeypatch.setattr(reaper, "orphan_zombies", scan)
    monkeypatch.setattr(trio.to_thread, "run_sync", inline)
    async with trio.open_nursery() as nursery:
        await nursery.start(reaper.run_orphan_reaper, 1.0)
        await trio.sleep(3600)
        assert len(scans) == 1
        os.kill(os.getpid(), signal.SIGCHLD)  # the handler runs before os.kill returns
        await trio.sleep(3600)
        assert len(scans) == 2
        # A burst of exits within the grace period costs two scans, not one each.
        for _ in range(20):
            os.kill(os.getpid(), signal.SIGCHLD)
            await trio.sleep(0.01)
        await trio.sleep(3600)
        assert len(scans) == 4 and scans[3] - scans[2] >= 1.0
        nursery.cancel_scope.cancel()


async def test_concurrent_spawns_all_recorded(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    pids: list[int] = []
    ready = trio.Event()

    async def one(i: int) -> None:
        async with open_child(ProcessSpec(key=f"c{i}", argv=["cat"]), ledger=ledger) as child:
            pids.append(child.pid)
            if len(pids) == 16:
                ready.set()
            await ready.wait()

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for i in range(16):
                nursery.start_soon(one, i)
            await ready.wait()
            on_disk = msgspec.json.decode(Path(ledger.path).read_bytes())["rows"]
            assert sorted(r["pid"] for r in on_disk) == sorted(pids)
    assert ledger.rows() == []
    assert msgspec.json.decode(Path(ledger.path).read_bytes())["rows"] == []


async def test_200_spawn_close_cycles_leave_no_zombie_or_stray(tmp_path: Path) -> None:
    # Three ways to end: the goodbye (cat exits at EOF), SIGTERM after a short goodbye, SIGKILL.
    ways = [
        (["cat"], 5.0, "exited"),
        (["sleep", "1000"], 0.02, "killed"),
        (["sleep", "1000"], 0.0, "killed"),
    ]
    ledger = Ledger(tmp_path)
    with trio.fail_after(300):  # some 10 s on a quiet machine; generous for a loaded one
        for i in range(200):
            argv, shutdown, reason = ways[i % 3]
            spec = ProcessSpec(key=f"cycle{i}", argv=argv, shutdown=shutdown)
            async with open_child(spec, ledger=ledger) as child:
                pass
            assert child.status is not None and child.status.reason == reason
    assert await wait_no_descendants(timeout=1) == []
    assert reaper.live_pids() == frozenset()
    assert reaper.orphan_zombies() == set()
    assert ledger.rows() == []


# A launcher that is not us: it spawns ARGV (after the fd to report on) in a new session with the stdio it was given, prints
# the pid and exits at once, so the child is re-parented to this (subreaper) process.
_FOREIGN_LAUNCHER = (
    "import os, sys; report, argv = int(sys.argv[1]), sys.argv[2:];"
    "os.set_inheritable(report, False);"
    "pid = os.posix_spawn(argv[0], argv, dict(os.environ), setsid=True);"
    "os.write(report, str(pid).encode())"
)


async def _spawn_elsewhere(
    argv: Sequence[str], *, cwd: str | None, env: Mapping[str, str],
    death_signal: signal.Signals | None,
) -> Spawned:
    """A ``Spawner`` whose children another process forks: pipes here, pid by re-parenting."""
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    report_r, report_w = os.pipe()
    launcher = subprocess.Popen(
        [sys.executable, "-c", _FOREIGN_LAUNCHER, str(report_w), *argv], cwd=cwd, env=dict(env),
        stdin=stdin_r, stdout=stdout_w, stderr=stderr_w, pass_fds=[report_w])
    for fd in (stdin_r, stdout_w, stderr_w, report_w):
        os.close(fd)
    await trio.to_thread.run_sync(launcher.wait)
    with os.fdopen(report_r, "rb") as report:
        pid = int(report.read())  # the launcher has exited: this does not block
    reaper.claim(pid)
    stdin, stdout, stderr = (trio.lowlevel.FdStream(fd) for fd in (stdin_w, stdout_r, stderr_r))
    return Spawned(pid, stdin, stdout, stderr)


async def test_a_child_forked_elsewhere_is_supervised_like_our_own(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    spec = ProcessSpec(key="foreign", kind="test", argv=command("echo"), cwd=ROOT, shutdown=5)
    with trio.fail_after(30):
        async with open_child(spec, ledger=ledger, spawner=_spawn_elsewhere) as child:
            proc = psutil.Process(child.pid)
            assert proc.ppid() == os.getpid() and os.getpgid(child.pid) == child.pid
            (row,) = msgspec.json.decode(Path(ledger.path).read_bytes())["rows"]
            assert (row["pid"], row["pgid"]) == (child.pid, child.pid)
            assert read_marker(child.pid) == (ledger.state_dir, child.ledger_key)
            await child.send(b'{"n": 1}\n')
            assert await child.receive_frame() == b'{"n": 1}'
            await child.close_stdin()
            assert await child.wait() == ExitStatus(reason="exited", exit_code=0)
        assert not psutil.pid_exists(child.pid)
        assert msgspec.json.decode(Path(ledger.path).read_bytes())["rows"] == []
