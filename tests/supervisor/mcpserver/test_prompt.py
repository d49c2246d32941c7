"""``corral_prompt``'s waiting, over a scripted daemon connection and virtual time: when a
permission request counts as waiting, and the progress notifications (a step each, a heartbeat
between)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

import trio
import trio.testing

from protocol.events import Decision, Event, Permission, PermissionDecided, Result, Tool, User
from protocol.frames import EventFrame
from supervisor.mcpserver.tools import HEARTBEAT, Tools


class _Info(NamedTuple):
    last_seq: int
    state: str


class _Daemon:
    """One session's log, appended by the test (``add``) and followed like the daemon's."""

    def __init__(self) -> None:
        self.log: list[Event] = []
        self.appended = trio.Event()
        self.decisions: list[tuple[str, Decision]] = []

    def add(self, *events: Event) -> None:
        self.log.extend(events)
        self.appended.set()
        self.appended = trio.Event()

    async def get(self, session_id: str) -> _Info:
        return _Info(last_seq=len(self.log), state="idle")

    async def prompt(self, session_id: str, text: str) -> None:
        self.add(User(text=text))

    async def permission(self, session_id: str, permission_id: str, decision: Decision) -> None:
        self.decisions.append((permission_id, decision))
        self.add(PermissionDecided(permission_id=permission_id, decision=decision, by="c-1"))

    async def events(self, session_id: str, from_seq: int = 0) -> AsyncIterator[EventFrame]:
        seq = max(from_seq, 1)
        while True:
            while seq <= len(self.log):
                yield EventFrame(session_id=session_id, seq=seq, ts="", event=self.log[seq - 1])
                seq += 1
            await self.appended.wait()


class _Caller:
    name = "test"

    def __init__(self, answer: Decision | None = None) -> None:
        self.answer = answer
        self.asked: list[str] = []
        self.progress_seen: list[tuple[float, str]] = []

    async def progress(self, done: float, message: str) -> None:
        self.progress_seen.append((done, message))

    async def ask(self, permission: Permission, session_id: str) -> Decision | None:
        self.asked.append(permission.permission_id)
        return self.answer


def _tools(daemon: _Daemon) -> Tools:
    @asynccontextmanager
    async def connect(name: str) -> AsyncIterator[Any]:
        yield daemon

    return Tools(connect)


async def test_a_step_each_and_a_heartbeat_in_between(autojump_clock: trio.testing.MockClock) -> None:
    daemon, caller = _Daemon(), _Caller()

    async def harness() -> None:
        await trio.sleep(25)
        daemon.add(Tool(call_id="t1", name="bash"))
        await trio.sleep(5)
        daemon.add(Result(stop_reason="end_turn"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(harness)
        answer = await _tools(daemon).call("corral_prompt", {"session_id": "s-1", "text": "go"}, caller)
    assert answer["stop_reason"] == "end_turn" and trio.current_time() == 30
    assert caller.progress_seen == [(0.001, "user"), (HEARTBEAT, "still running (last: user)"),
                                    (2 * HEARTBEAT, "still running (last: user)"),
                                    (25.0, "tool bash started")]


async def test_a_request_the_policy_answers_in_the_same_step_is_not_asked(
        autojump_clock: trio.testing.MockClock) -> None:
    daemon, caller = _Daemon(), _Caller()

    async def harness() -> None:
        await trio.sleep(1)
        daemon.add(Permission(permission_id="p1", tool="bash"),
                   PermissionDecided(permission_id="p1", decision="allow", by="policy"))
        await trio.sleep(1)
        daemon.add(Result(stop_reason="end_turn"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(harness)
        answer = await _tools(daemon).call("corral_prompt", {"session_id": "s-1", "text": "go"}, caller)
    assert answer["state"] == "idle" and caller.asked == []


async def test_an_open_request_is_asked_and_the_answer_decides_it(autojump_clock: trio.testing.MockClock) -> None:
    daemon, caller = _Daemon(), _Caller(answer="allow_always")

    async def harness() -> None:
        await trio.sleep(1)
        daemon.add(Permission(permission_id="p1", tool="bash"))
        while not daemon.decisions:
            await daemon.appended.wait()
        daemon.add(Result(stop_reason="end_turn"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(harness)
        answer = await _tools(daemon).call("corral_prompt", {"session_id": "s-1", "text": "go"}, caller)
    assert answer["stop_reason"] == "end_turn"
    assert caller.asked == ["p1"] and daemon.decisions == [("p1", "allow_always")]


async def test_without_an_answer_the_call_returns_waiting(autojump_clock: trio.testing.MockClock) -> None:
    daemon = _Daemon()
    daemon.add(User(text="earlier"), Result())
    answer = await _tools(daemon).call("corral_prompt", {"session_id": "s-1", "text": "go"}, _Caller())
    assert answer["state"] == "running" and trio.current_time() == 600  # nothing happened: wait_s ran out

    async def harness() -> None:
        daemon.add(Permission(permission_id="p2", tool="edit", input={"path": "x"}))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(harness)
        answer = await _tools(daemon).call("corral_prompt", {"session_id": "s-1", "text": "again"}, _Caller())
    assert answer == {"state": "waiting_for_permission",
                      "waiting_for_permission": {"permission_id": "p2", "tool": "edit", "input": {"path": "x"}}}
