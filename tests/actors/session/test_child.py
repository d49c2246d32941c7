"""One harness child generation (``Harness.run``): what it tells the session and how it ends."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from actors.harness import HarnessRequest
from actors.session.child import Harness
from actors.session.messages import ChildFrame, ChildReaped, ChildSpawned, ChildSpawnFailed, Input
from protocol.errors import ActorGone, ChildExited
from actors.session.config import SessionsConfig
from supervisor.proc.config import ChildrenConfig
from supervisor.proc.spec import ExitStatus

from .scripted import ScriptedDriver


def make(tmp_path: Path, driver: ScriptedDriver, told: list[Input], *, gone_after: int | None = None) -> Harness:
    async def tell(msg: Input) -> None:
        if gone_after is not None and len(told) >= gone_after:
            raise ActorGone("the session stopped")
        told.append(msg)

    request = HarnessRequest(session_id="s-1", cwd=str(tmp_path), work_dir=str(tmp_path / "h"))
    return Harness(driver=driver, session_id="s-1", harness="scripted", sessions=SessionsConfig(),
                   children=ChildrenConfig(), ledger=None, tell=tell, request=lambda: request)


async def test_a_generation_the_session_closes_ends_normally_and_one_that_dies_is_a_crash(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver, told = ScriptedDriver(), []
    harness = make(tmp_path, driver, told)
    async with trio.open_nursery() as nursery:
        running = await nursery.start(harness.run)
        assert harness.running == {1: running}
        harness.close(1, ())
    assert [type(m) for m in told] == [ChildSpawned, ChildReaped]
    assert harness.running == {}

    with pytest.RaisesGroup(pytest.RaisesExc(ChildExited, match="killed by SIGKILL")):
        async with trio.open_nursery() as nursery:
            await nursery.start(harness.run)
            child = driver.children[1]
            child.emit(type="assistant", text="last words")
            child.die()
    assert told[2:] == [ChildSpawned(gen=2, request=told[2].request, pid=child.pid),  # type: ignore[union-attr]
                        ChildFrame(gen=2, data=b'{"type": "assistant", "text": "last words"}'),
                        ChildReaped(gen=2, status=ExitStatus(reason="crashed", signal="SIGKILL"))]


async def test_writes_and_closes_reach_their_own_generation_only(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver, told = ScriptedDriver(), []
    harness = make(tmp_path, driver, told)
    async with trio.open_nursery() as nursery:
        await nursery.start(harness.run)
        child = driver.children[0]
        await harness.write(2, b'{"type":"user","text":"not for you"}\n')
        harness.close(2, ())
        await harness.write(1, b'{"type":"user","text":"for you"}\n')
        assert child.received == [{"type": "user", "text": "for you"}] and not child.stdin_closed
        harness.close(1, ())
    child.die()


async def test_a_child_that_cannot_start_reports_it_then_crashes(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver, told = ScriptedDriver(failures=1), []
    harness = make(tmp_path, driver, told)
    with pytest.RaisesGroup(pytest.RaisesExc(ChildExited, match="did not start")):
        async with trio.open_nursery() as nursery:
            assert await nursery.start(harness.run) is None  # started (so the planner counts it), then crashed
    assert told == [ChildSpawnFailed(gen=1, code="launch_failed", message="scripted: no such binary")]


async def test_a_generation_whose_session_is_gone_ends_normally_and_closes_its_child(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    driver, told = ScriptedDriver(), []
    harness = make(tmp_path, driver, told, gone_after=1)
    async with trio.open_nursery() as nursery:
        await nursery.start(harness.run)
        child = driver.children[0]
        child.emit(type="assistant", text="anyone there?")
    assert [type(m) for m in told] == [ChildSpawned]
    assert child.status is not None and harness.running == {}
