"""The session actor (the inbox loop around the core) with in-memory children and virtual time.

No process is spawned: ``ScriptedDriver.spawn`` hands out ``MemoryChild``ren and the test plays
their part. The restart schedule is the tree's supervisor's, checked to the exact virtual time.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio
import trio.testing

from actors.harness import HarnessRequest
from actors.session import actor as actor_module
from actors.session.actor import Session
from actors.session.deps import SessionDeps
from actors.session.eventlog import EventLog
from actors.session import meta as meta_module
from actors.session.meta import SessionMeta, read_meta
from protocol import events as ev
from protocol.errors import ActorGone
from protocol.messages import SessionPrompt, SessionSetModel
from actors.session.config import SessionsConfig
from supervisor.proc.config import ChildrenConfig
from supervisor.proc.spec import ExitStatus
from supervisor.tree import Backoff

from .scripted import GOODBYE, ScriptedDriver

SID = "s-1"
T = TypeVar("T")


async def inline(call: Callable[[], T]) -> T:
    return call()


def make_session(tmp_path: Path, driver: ScriptedDriver, *, offload: Any = inline, seed: int = 0,
                 fsync: Callable[[int], None] = lambda fd: None, runs_work: bool = False,
                 after_result: Any = None, **settings: Any) -> Session:
    directory = tmp_path / SID
    meta = SessionMeta(id=SID, harness="scripted", cwd=str(tmp_path), created_at="2026-01-01T00:00:00.000Z",
                       state="starting")
    log, _ = EventLog.open(directory, SID, fsync=fsync, offload=offload if offload is inline else None,
                           durability=settings.get("durability", "turn"))
    deps = SessionDeps(driver=driver, sessions=SessionsConfig(**settings), children=ChildrenConfig(),
                       ledger=None, directory=directory, offload=offload, rng=random.Random(seed),
                       after_result=after_result)
    request = HarnessRequest(session_id=SID, cwd=str(tmp_path), work_dir=str(directory / "harness"),
                             runs_work=runs_work)
    return Session(meta, request, deps, log)


def events(session: Session) -> list[ev.Event]:
    return [frame.event for frame in session.log.frames_from(1)]


def kinds(session: Session) -> list[str]:
    out = []
    for event in events(session):
        kind = str(type(event).__struct_config__.tag)
        if isinstance(event, ev.Status):
            kind += f":{event.state}"
        out.append(kind)
    return out


async def until(session: Session, predicate: Callable[[ev.Event], bool]) -> ev.Event:
    """The first event (from seq 1) that satisfies ``predicate``, waiting for it if need be."""
    seen = 0
    with trio.fail_after(600):
        while True:
            for frame in session.log.frames_from(seen + 1):
                seen = frame.seq
                if predicate(frame.event):
                    return frame.event
            await session.feed.wait_past(seen)


async def test_a_session_is_idle_once_its_child_runs_and_serves_a_turn(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver = ScriptedDriver()
    session = make_session(tmp_path, driver)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        [child] = driver.children
        assert session.info().state == "idle" and session.info().pid == child.pid
        assert await session.prompt("hi", "c-1") == "prompted"
        assert await child.next_command() == {"type": "user", "text": "hi"}
        child.emit(type="assistant", text="yo", delta=True)
        child.emit(type="result", stop_reason="end_turn")
        await until(session, lambda e: isinstance(e, ev.Result))
        await session.close("c-1")
    assert session.closed.is_set() and session.info().state == "closed"
    assert kinds(session) == ["status:idle", "user", "status:running", "assistant", "result", "status:idle",
                              "status:closing", "exit", "status:closed"]
    assert read_meta(tmp_path / SID).state == "closed"


async def test_a_crash_loop_follows_the_supervisors_backoff_then_fails(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, seed=7, restart_intensity=3, restart_period=60.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        for n in range(1, 5):
            child = await driver.next_child(n)
            child.die(ExitStatus(reason="exited", exit_code=7))
        await session.closed.wait()
    rng, backoff = random.Random(7), Backoff()
    first, second = backoff.delay(1, rng), backoff.delay(2, rng)
    start = driver.spawn_times[0]
    assert [t - start for t in driver.spawn_times] == pytest.approx([0.0, 0.0, first, first + second])
    assert 0.5 <= first <= 0.6 and 1.0 <= second <= 1.2
    log = events(session)
    assert [e.exit_code for e in log if isinstance(e, ev.Exit)] == [7, 7, 7, 7]
    assert [e.attempt for e in log if isinstance(e, ev.Restarted)] == [1, 2, 3]
    error = [e for e in log if isinstance(e, ev.Error)][-1]
    assert error.code == "restart_intensity" and error.error_class == "launch"
    assert session.info().state == "failed" and session.info().restarts == 3
    assert read_meta(tmp_path / SID).closed_reason == "failed"


async def test_a_permission_nobody_answers_is_denied_at_its_deadline(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, permission_timeout=5.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        [child] = driver.children
        await session.prompt("go", "c-1")
        await child.next_command()
        asked_at = trio.current_time()
        child.emit(type="permission", permission_id="p1", tool="bash", kind="exec")
        assert await child.next_command() == {"type": "permission_decision", "permission_id": "p1",
                                              "decision": "deny"}
        assert trio.current_time() == asked_at + 5.0
        decided = await until(session, lambda e: isinstance(e, ev.PermissionDecided))
        assert decided == ev.PermissionDecided(permission_id="p1", decision="timeout", by="session",
                                             by_name="session")
        nursery.cancel_scope.cancel()


async def test_a_silent_turn_is_stalled_after_the_threshold(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, stall_threshold=10.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        [child] = driver.children
        await session.prompt("go", "c-1")
        await child.next_command()
        child.emit(type="assistant", text="thinking", delta=True)
        await until(session, lambda e: isinstance(e, ev.Assistant))
        spoke_at = trio.current_time()
        await until(session, lambda e: isinstance(e, ev.Status) and e.stalled)
        assert trio.current_time() == spoke_at + 10.0
        child.emit(type="assistant", text="back", delta=True)
        await until(session, lambda e: isinstance(e, ev.Status) and e.state == "running" and not e.stalled
                    and session.log.last_seq > 6)
        nursery.cancel_scope.cancel()
    assert kinds(session)[:7] == ["status:idle", "user", "status:running", "assistant", "status:running",
                                  "assistant", "status:running"]


async def test_a_restarted_child_never_gets_a_frame_the_dead_translator_produced(
        tmp_path: Path, mock_clock: trio.testing.MockClock) -> None:
    gate, armed = trio.Event(), [False]

    async def offload(call: Callable[[], T]) -> T:
        if armed[0]:
            await gate.wait()
        return call()

    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, offload=offload)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        one = driver.children[0]
        armed[0] = True
        async with trio.open_nursery() as requests:
            # The loop writes set_model to child one, then waits on the meta write...
            requests.start_soon(session.call, SessionSetModel(id=0, session_id=SID, model="m2"), "c-1")
            await trio.testing.wait_all_tasks_blocked()
            # ... while a prompt queues up, child one dies and child two starts at once.
            requests.start_soon(session.call, SessionPrompt(id=0, session_id=SID, text="for one"), "c-1")
            await trio.testing.wait_all_tasks_blocked()
            one.die()
            two = await driver.next_child(2)
            await trio.testing.wait_all_tasks_blocked()
            armed[0] = False
            gate.set()
        # The prompt went to child one's translator (its exit was not yet read): it is dropped,
        # and the turn it started ends as crashed.
        await until(session, lambda e: isinstance(e, ev.Restarted))
        assert one.kinds() == ["set_model"]
        assert "user" not in two.kinds()
        nursery.cancel_scope.cancel()
    log = [e for e in events(session) if not isinstance(e, ev.Status)]
    assert [type(e).__name__ for e in log[:5]] == ["User", "Error", "Result", "Exit", "Restarted"]
    assert log[1].code == "harness_crashed" and log[2].is_error  # type: ignore[union-attr]


async def test_frames_waiting_together_are_published_to_the_pumps_once(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    # One wake-up of the subscription pumps per batch, not per event; and a pump never sees an
    # event before its batch is published (the feed shows the log up to the last publish).
    gate, armed = trio.Event(), [False]

    async def offload(call: Callable[[], T]) -> T:
        if armed[0]:
            await gate.wait()
        return call()

    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, offload=offload)
    published: list[int] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        [child] = driver.children
        await session.prompt("go", "c-1")
        await child.next_command()
        appended = session.feed.appended
        session.feed.appended = lambda: (published.append(session.log.last_seq), appended())  # type: ignore[method-assign]
        armed[0] = True
        nursery.start_soon(session.call, SessionSetModel(id=0, session_id=SID, model="m2"), "c-1")
        await trio.testing.wait_all_tasks_blocked()  # the loop waits on the meta write
        shown = session.feed.last_seq
        for n in range(4):
            child.emit(type="assistant", text=f"a{n}", delta=True)
        child.emit(type="result", stop_reason="end_turn")
        await trio.testing.wait_all_tasks_blocked()  # the frames wait in the inbox
        assert shown == 3 and session.feed.last_seq == shown and list(session.feed.read_from(shown + 1)) == []
        armed[0] = False
        gate.set()
        await until(session, lambda e: isinstance(e, ev.Result))
        nursery.cancel_scope.cancel()
    assert published[0] == shown + 6  # assistant x4, result, idle: one publish
    assert kinds(session)[shown:shown + 6] == ["assistant"] * 4 + ["result", "status:idle"]


async def test_stopping_a_session_closes_it_fully_in_its_log(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver = ScriptedDriver(goodbye=True)
    session = make_session(tmp_path, driver)
    with trio.CancelScope() as scope:  # the sessions supervisor stopping its child
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            [child] = driver.children
            await session.prompt("go", "c-1")
            await child.next_command()
            child.emit(type="permission", permission_id="p1", tool="bash", kind="exec")
            await until(session, lambda e: isinstance(e, ev.Permission))
            scope.cancel()
    assert session.closed.is_set()
    assert kinds(session)[-6:] == ["status:waiting", "status:closing", "permission_decided", "result", "exit",
                                   "status:closed"]
    log = events(session)
    assert log[-4] == ev.PermissionDecided(permission_id="p1", decision="cancelled", by="session",
                                           by_name="session")
    assert isinstance(log[-3], ev.Result) and log[-3].stop_reason == "interrupted"
    assert log[-2] == ev.Exit(exit_code=0, reason="closed")
    assert child.received[-1] == json.loads(GOODBYE) and child.stdin_closed
    meta = read_meta(tmp_path / SID)
    assert (meta.state, meta.closed_reason) == ("closed", "daemon_stopped")


async def test_a_stop_that_overruns_its_bound_kills_the_child_and_still_logs_the_end(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver = ScriptedDriver(stubborn=True)
    session = make_session(tmp_path, driver, close_timeout=2.0)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            stopped_at = trio.current_time()
            scope.cancel()
    assert trio.current_time() == stopped_at + 2.0 + 5.0
    assert kinds(session)[-3:] == ["status:closing", "exit", "status:closed"]
    assert events(session)[-2] == ev.Exit(reason="closed")
    assert driver.children[0].status == ExitStatus(reason="killed", signal="SIGKILL")


async def test_a_bug_ends_the_session_with_an_error_event_before_its_exit(
        tmp_path: Path, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture) -> None:
    driver = ScriptedDriver()
    session = make_session(tmp_path, driver)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        [child] = driver.children
        child.emit_raw(b"boom")
        await session.closed.wait()
    log = events(session)
    error = next(e for e in log if isinstance(e, ev.Error))
    assert error.code == "internal" and "RuntimeError" in error.message
    assert kinds(session)[-3:] == ["error", "exit", "status:failed"]
    assert log[-2] == ev.Exit(reason="killed")
    assert read_meta(tmp_path / SID).state == "failed"
    assert child.status is not None  # the child was closed with the session
    assert "session s-1 failed" in caplog.text


async def test_fsync_and_meta_writes_run_off_the_trio_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: dict[str, set[int]] = {"fsync": set(), "meta": set()}

    def write_meta(directory: Path, meta: SessionMeta) -> None:
        threads["meta"].add(threading.get_ident())
        meta_module.write_meta(directory, meta)

    monkeypatch.setattr(actor_module, "write_meta", write_meta)
    driver = ScriptedDriver(handshake=True)
    session = make_session(tmp_path, driver, offload=None, durability="event",
                           fsync=lambda fd: threads["fsync"].add(threading.get_ident()))
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            [child] = driver.children
            child.emit(type="init", vendor_session_id="v-1")  # saves meta
            await session.prompt("go", "c-1")
            child.emit(type="result", stop_reason="end_turn")
            await until(session, lambda e: isinstance(e, ev.Result))
            await session.close("c-1")
    assert threads["fsync"] and threads["meta"]
    assert threading.get_ident() not in threads["fsync"] | threads["meta"]
    assert read_meta(tmp_path / SID).vendor_session_id == "v-1"


@pytest.mark.parametrize("durability", ["turn", "event"])
async def test_subscribers_wait_for_the_fsync_of_a_turns_end_only_under_event(
        tmp_path: Path, durability: str) -> None:
    armed, entered, release = threading.Event(), threading.Event(), threading.Event()

    def fsync(fd: int) -> None:
        if armed.is_set():
            entered.set()
            release.wait(20)

    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, offload=None, durability=durability, fsync=fsync)
    woken = trio.Event()

    async def subscriber(after: int) -> None:
        await session.feed.wait_past(after)
        woken.set()

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            [child] = driver.children
            await session.prompt("go", "c-1")
            await trio.testing.wait_all_tasks_blocked()  # the prompt's batch is published
            nursery.start_soon(subscriber, session.log.last_seq)
            await trio.testing.wait_all_tasks_blocked()
            armed.set()
            child.emit(type="result", stop_reason="end_turn")
            await trio.to_thread.run_sync(entered.wait, 20)
            await trio.testing.wait_all_tasks_blocked()
            # turn: the clients already see the turn's end while its fsync runs; event: not yet
            assert woken.is_set() is (durability == "turn")
            if durability == "turn":  # and the loop takes the next prompt meanwhile
                await session.prompt("next", "c-1")
                assert entered.is_set() and not release.is_set()
            release.set()
            await woken.wait()
            await session.close("c-1")
    assert any(isinstance(e, ev.Result) for e in events(session))


def flushers() -> int:
    """How many of this run's tasks are a session's flusher."""
    def count(task: trio.lowlevel.Task) -> int:
        return task.name.endswith("Session._flush") + sum(
            count(child) for nursery in task.child_nurseries for child in nursery.child_tasks)
    return count(trio.lowlevel.current_root_task())


async def test_the_flusher_runs_only_while_writes_are_pending_and_fsyncs_them_within_the_interval(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    times: list[float] = []
    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, fsync=lambda fd: times.append(trio.current_time()))
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        [child] = driver.children
        await trio.sleep(1)
        assert flushers() == 0 and times and not session.log.statistics().dirty  # idle: no flusher
        assert await session.prompt("hi", "c-1") == "prompted"
        assert await child.next_command() == {"type": "user", "text": "hi"}
        synced = len(times)
        child.emit(type="assistant", text="yo", delta=True)  # not a turn boundary: left to the flusher
        await until(session, lambda e: isinstance(e, ev.Assistant))
        written = trio.current_time()
        assert session.log.statistics().dirty and flushers() == 1
        await trio.sleep(1)
        assert len(times) == synced + 1 and written < times[-1] <= written + 0.1
        assert flushers() == 0 and not session.log.statistics().dirty
        await session.close("c-1")
    assert kinds(session)[-1] == "status:closed"


async def test_work_runs_beside_the_loop_and_ends_with_its_child(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver = ScriptedDriver(work=True)
    session = make_session(tmp_path, driver, runs_work=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        one = driver.children[0]
        [runner] = driver.runners
        assert runner.opened == 1
        # A job that blocks (a terminal's wait) does not hold up the loop or a later job.
        one.emit(type="work", id=1, job="wait")
        await runner.wait_started("wait")
        one.emit(type="work", id=2, job="read")
        await runner.wait_started("read")
        assert await session.prompt("hi", "c-1") == "prompted"
        assert await one.next_command() == {"type": "user", "text": "hi"}
        runner.finish("read", "content")
        assert await one.next_command() == {"type": "done", "id": 2, "outcome": "content"}
        # The child dies: its blocked job is cancelled and its runner closed before the next
        # child starts, with a runner of its own.
        one.die()
        two = await driver.next_child(2)
        assert runner.cancelled == ["wait"] and runner.closed == 1
        assert len(driver.runners) == 2 and driver.runners[1].opened == 1
        await session.close("c-1")
        assert driver.runners[1].closed == 1
        assert "done" not in two.kinds()


async def test_a_session_that_runs_no_work_opens_no_work_runner(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver = ScriptedDriver(work=True)
    session = make_session(tmp_path, driver)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        await session.close("c-1")
    assert driver.runners == []


def _changed(count: int) -> ev.Workspace:
    return ev.Workspace(state="changed", branch="corral/x", path="/w", changed_files=count)


async def test_the_after_result_hook_runs_beside_the_loop_and_its_event_follows_the_result(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    asked: list[str] = []
    release = trio.Event()

    async def after_result(session_id: str) -> ev.Event | None:
        asked.append(session_id)
        if len(asked) == 1:
            await release.wait()  # git on a big worktree: the session must not wait for it
            return _changed(1)
        return None  # the count did not move

    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, after_result=after_result)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        [child] = driver.children
        await session.prompt("one", "c-1")
        child.emit(type="result", stop_reason="end_turn")
        await until(session, lambda e: isinstance(e, ev.Result))
        # While the hook runs the session serves the next turn.
        assert await session.prompt("two", "c-1") == "prompted"
        assert await child.next_command() == {"type": "user", "text": "one"}
        assert await child.next_command() == {"type": "user", "text": "two"}
        child.emit(type="result", stop_reason="end_turn")
        await trio.testing.wait_all_tasks_blocked()
        assert asked == [SID] and not any(isinstance(e, ev.Workspace) for e in events(session))
        release.set()
        await until(session, lambda e: isinstance(e, ev.Workspace))
        await trio.testing.wait_all_tasks_blocked()
        assert asked == [SID, SID]  # the second result ran it once more
        await session.close("c-1")
    kinds_ = [k for k in kinds(session) if not k.startswith("status")]
    assert kinds_ == ["user", "result", "user", "result", "workspace", "exit"]
    assert [e for e in events(session) if isinstance(e, ev.Workspace)] == [_changed(1)]


async def test_an_after_result_hook_that_overruns_is_abandoned_and_the_session_goes_on(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    started: list[float] = []
    second = trio.Event()

    async def after_result(session_id: str) -> ev.Event | None:
        started.append(trio.current_time())
        if len(started) == 1:
            await trio.sleep_forever()
        second.set()
        raise RuntimeError("git is not installed")

    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, after_result=after_result)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        [child] = driver.children
        for text in ("one", "two"):
            await session.prompt(text, "c-1")
            assert await child.next_command() == {"type": "user", "text": text}
            child.emit(type="result", stop_reason="end_turn")
            await trio.testing.wait_all_tasks_blocked()
        await second.wait()
        assert started[1] - started[0] == actor_module.AFTER_RESULT_TIMEOUT
        assert await session.prompt("three", "c-1") == "prompted"
        await session.close("c-1")
    assert not any(isinstance(e, ev.Workspace) for e in events(session))
    assert [e.stop_reason for e in events(session) if isinstance(e, ev.Result)] == [
        "end_turn", "end_turn", "interrupted"]


async def test_an_announced_event_is_appended_by_the_loop_in_its_turn(
        tmp_path: Path, mock_clock: trio.testing.MockClock) -> None:
    gate, armed = trio.Event(), [False]

    async def offload(call: Callable[[], T]) -> T:
        if armed[0]:
            await gate.wait()
        return call()

    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, offload=offload)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        armed[0] = True
        async with trio.open_nursery() as requests:
            # The loop is busy (a meta write) when the daemon announces a workspace change.
            requests.start_soon(session.call, SessionSetModel(id=0, session_id=SID, model="m2"), "c-1")
            await trio.testing.wait_all_tasks_blocked()
            requests.start_soon(session.announce, _changed(3))
            await trio.testing.wait_all_tasks_blocked()
            assert not any(isinstance(e, ev.Workspace) for e in events(session))
            armed[0] = False
            gate.set()
        [announced] = [f for f in session.log.frames_from(1) if isinstance(f.event, ev.Workspace)]
        assert announced.event == _changed(3) and announced.seq == session.log.last_seq
        await session.close("c-1")
    with pytest.raises(ActorGone):
        await session.announce(_changed(4))
