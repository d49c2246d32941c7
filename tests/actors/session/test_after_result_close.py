"""A session that closes right after a ``result`` still logs what its after-result run found.

The hook (the workspaces' changed-files count) runs beside the loop; a run due or in flight when
the close starts is waited for, and so is the run of a ``result`` that lands during the close,
all within one ``AFTER_RESULT_TIMEOUT``, and their events land before the ``exit``. In-memory children and virtual time, as in ``test_actor``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio
import trio.testing

from actors.session.actor import Session
from actors.session.afterresult import AFTER_RESULT_TIMEOUT
from actors.session.meta import read_meta
from protocol import events as ev
from protocol.messages import SessionSetModel

from .scripted import ScriptedDriver
from .test_actor import SID, events, make_session, until

T = TypeVar("T")


def _changed(count: int) -> ev.Workspace:
    return ev.Workspace(state="changed", branch="corral/x", path="/w", changed_files=count)


async def _results(session: Session, count: int) -> None:
    """Wait until the log holds ``count`` results."""
    with trio.fail_after(600):
        while sum(isinstance(e, ev.Result) for e in events(session)) < count:
            await session.feed.wait_past(session.log.last_seq)


@asynccontextmanager
async def _running(tmp_path: Path, after_result: Any) -> AsyncIterator[tuple[Session, Any]]:
    """A session with ``after_result`` and its scripted child, running for the block."""
    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, after_result=after_result)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        [child] = driver.children
        yield session, child


async def _turn_then_hook(session: Session, child: Any) -> None:
    """One turn to its ``result``, then until the after-result hook has had its chance to run."""
    await session.prompt("one", "c-1")
    child.emit(type="result", stop_reason="end_turn")
    await until(session, lambda e: isinstance(e, ev.Result))
    await trio.testing.wait_all_tasks_blocked()


async def _prompted(session: Session, child: Any, text: str) -> None:
    """Prompt ``text`` and see it reach the child."""
    await session.prompt(text, "c-1")
    assert await child.next_command() == {"type": "user", "text": text}


def _story(session_events: list[ev.Event]) -> list[str]:
    return [str(type(e).__struct_config__.tag) for e in session_events if not isinstance(e, ev.Status)]


async def test_a_close_waits_for_the_run_in_flight_and_logs_its_event_before_the_exit(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    started: list[float] = []

    async def after_result(session_id: str) -> ev.Event | None:
        started.append(trio.current_time())
        await trio.sleep(5)  # git on a big worktree
        return _changed(2)

    async with _running(tmp_path, after_result) as (session, child):
        await _turn_then_hook(session, child)
        assert len(started) == 1  # in flight when the client closes
        await session.close("c-1")
        assert trio.current_time() == started[0] + 5
    assert _story(events(session)) == ["user", "result", "workspace", "exit"]
    assert [e for e in events(session) if isinstance(e, ev.Workspace)] == [_changed(2)]
    assert session.info().state == "closed"


async def test_a_daemon_stop_in_the_results_batch_logs_the_due_runs_event_before_the_exit(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    gate, armed = trio.Event(), [False]
    asked: list[float] = []

    async def offload(call: Callable[[], T]) -> T:
        if armed[0]:
            await gate.wait()
        return call()

    async def after_result(session_id: str) -> ev.Event | None:
        asked.append(trio.current_time())
        await trio.sleep(1)
        return _changed(1)

    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, offload=offload, after_result=after_result)
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        [child] = driver.children
        await _prompted(session, child, "one")
        armed[0] = True
        # The loop is busy (a meta write) while the result arrives and the daemon stops the
        # session: the loop takes the result and the stop in one batch, before the hook ran.
        nursery.start_soon(session.call, SessionSetModel(id=0, session_id=SID, model="m2"), "c-1")
        await trio.testing.wait_all_tasks_blocked()
        child.emit(type="result", stop_reason="end_turn")
        await trio.testing.wait_all_tasks_blocked()  # the result waits in the inbox ...
        nursery.cancel_scope.cancel()  # ... and the daemon's stop behind it
        with trio.CancelScope(shield=True):
            await trio.testing.wait_all_tasks_blocked()
            assert asked == []
            armed[0] = False
            gate.set()
    assert _story(events(session)) == ["user", "result", "workspace", "exit"]
    assert [e for e in events(session) if isinstance(e, ev.Workspace)] == [_changed(1)]
    assert read_meta(tmp_path / SID).closed_reason == "daemon_stopped"


async def test_a_close_skips_a_hook_that_overruns_and_does_not_hang(
        tmp_path: Path, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture) -> None:
    started: list[float] = []

    async def after_result(session_id: str) -> ev.Event | None:
        started.append(trio.current_time())
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    caplog.set_level(logging.WARNING, logger="corral.session")
    async with _running(tmp_path, after_result) as (session, child):
        await _turn_then_hook(session, child)
        await session.close("c-1")
        assert trio.current_time() == started[0] + AFTER_RESULT_TIMEOUT
    assert _story(events(session)) == ["user", "result", "exit"]
    assert "took more than" in caplog.text


async def test_a_close_waits_at_most_the_bound_for_a_run_in_flight_and_the_one_due_after_it(
        tmp_path: Path, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture) -> None:
    started: list[float] = []

    async def after_result(session_id: str) -> ev.Event | None:
        started.append(trio.current_time())
        if len(started) == 1:
            await trio.sleep(20)
            return _changed(1)
        await trio.sleep(25)  # within its own bound, past the close's
        return _changed(2)

    caplog.set_level(logging.WARNING, logger="corral.session")
    async with _running(tmp_path, after_result) as (session, child):
        for text in ("one", "two"):
            await _prompted(session, child, text)
            child.emit(type="result", stop_reason="end_turn")
            await _results(session, 1 if text == "one" else 2)
        await trio.testing.wait_all_tasks_blocked()
        assert len(started) == 1  # the second result's run is due behind the first
        closing_at = trio.current_time()
        await session.close("c-1")
        assert trio.current_time() == closing_at + AFTER_RESULT_TIMEOUT
    assert _story(events(session)) == ["user", "result", "user", "result", "workspace", "exit"]
    assert [e for e in events(session) if isinstance(e, ev.Workspace)] == [_changed(1)]
    assert "closing without the after-result run" in caplog.text


async def test_a_result_that_lands_during_the_close_gets_its_run_before_the_exit(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    asked: list[float] = []

    async def after_result(session_id: str) -> ev.Event | None:
        asked.append(trio.current_time())
        await trio.sleep(3)
        return _changed(4)

    async with _running(tmp_path, after_result) as (session, child):
        await _prompted(session, child, "one")
        # The turn ends as the child reads its stdin's end: the result comes after the close began.
        child.on_stdin_closed = lambda c: c.emit(type="result", stop_reason="end_turn")
        closing_at = trio.current_time()
        await session.close("c-1")
        assert asked == [closing_at] and trio.current_time() == closing_at + 3
    assert _story(events(session)) == ["user", "result", "workspace", "exit"]
    assert [e for e in events(session) if isinstance(e, ev.Workspace)] == [_changed(4)]


async def test_the_result_a_close_gives_a_running_turn_gets_its_run_before_the_exit(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    async def after_result(session_id: str) -> ev.Event | None:
        await trio.sleep(1)
        return _changed(1)

    async with _running(tmp_path, after_result) as (session, child):
        await _prompted(session, child, "one")
        await session.close("c-1")  # the child leaves without a result: the close ends the turn
    assert _story(events(session)) == ["user", "result", "workspace", "exit"]
    assert [e for e in events(session) if isinstance(e, ev.Result)][0].stop_reason == "interrupted"


async def test_the_runs_of_one_close_share_one_bound(
        tmp_path: Path, autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture) -> None:
    started: list[float] = []

    async def after_result(session_id: str) -> ev.Event | None:
        started.append(trio.current_time())
        await trio.sleep(20 if len(started) == 1 else 25)  # each within its own bound
        return _changed(len(started))

    caplog.set_level(logging.WARNING, logger="corral.session")
    async with _running(tmp_path, after_result) as (session, child):
        await _turn_then_hook(session, child)  # the first run is in flight when the close starts
        await session.prompt("two", "c-1")
        child.on_stdin_closed = lambda c: c.emit(type="result", stop_reason="end_turn")
        closing_at = trio.current_time()
        await session.close("c-1")
        # 20 s for the run in flight, then what is left of the bound for the late result's run.
        assert trio.current_time() == closing_at + AFTER_RESULT_TIMEOUT
    assert _story(events(session)) == ["user", "result", "user", "workspace", "result", "exit"]
    assert [e for e in events(session) if isinstance(e, ev.Workspace)] == [_changed(1)]
    assert "closing without the after-result run" in caplog.text
