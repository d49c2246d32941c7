"""The daemon's side of a native worker's asks (``actors.native.daemon.asks``), with an in-memory worker.

The worker's frames pass to the session untouched, except asks, which are answered beside it
(concurrently, one frame each way); failures become error answers; the child's end cancels
the asks in flight.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

import trio
import trio.testing

from actors.native.daemon.asks import NO_SERVICES, served
from protocol.errors import McpServerFailed
from protocol.events import Assistant, Event
from protocol.framing import LengthPrefixFramer
from protocol.native import (
    Answer,
    Ask,
    AskDiagnostics,
    CallMcpTool,
    Command,
    DiagnosticsReport,
    ListMcpTools,
    McpResult,
    McpToolDecl,
    McpTools,
    decode_command,
    decode_event,
    decode_worker_frame,
    encode_command,
    encode_event,
    is_ask,
)
from supervisor.proc.child import Goodbye
from supervisor.proc.spec import ExitStatus


class MemoryWorker:
    """A worker child in memory: ``emit`` writes a frame to its stdout; ``answers`` is what the
    daemon wrote to its stdin (decoded)."""

    pid = 4242

    def __init__(self) -> None:
        self._out, self._frames = trio.open_memory_channel[bytes](math.inf)
        self._in, self.stdin = trio.open_memory_channel[Command](math.inf)
        self._framer = LengthPrefixFramer()
        self.gone = False

    async def send(self, data: bytes) -> None:
        if self.gone:
            raise trio.BrokenResourceError("the worker is gone")
        self._framer.receive_data(data)
        for frame in self._framer.frames():
            self._in.send_nowait(decode_command(frame))

    def frames(self) -> AsyncIterator[bytes]:
        return self._frames.__aiter__()

    async def close(self, goodbye: Goodbye | None = None) -> ExitStatus:
        self.die()
        return ExitStatus(reason="exited", exit_code=0)

    def emit(self, frame: Event | Ask) -> None:
        self._out.send_nowait(encode_event(frame))

    def end_stdout(self) -> None:
        self._out.close()

    def die(self) -> None:
        self.gone = True
        self._out.close()


class Scripted:
    """Services that answer from a table, optionally waiting for a release first."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.cancelled: list[int] = []
        self.seen: list[tuple[str, Ask]] = []

    async def answer(self, session_id: str, ask: Ask) -> Answer:
        self.seen.append((session_id, ask))
        match ask:
            case ListMcpTools(id=ask_id):
                return McpTools(id=ask_id, tools=[McpToolDecl(name="mcp__fs__read")])
            case CallMcpTool(id=ask_id, name="mcp__fs__slow"):
                try:
                    await self.release.wait()
                except trio.Cancelled:
                    self.cancelled.append(ask_id)
                    raise
                return McpResult(id=ask_id, text="slow")
            case CallMcpTool(name="mcp__fs__failed"):
                raise McpServerFailed("fs failed: 3 crashes in 60 s")
            case CallMcpTool(name="mcp__fs__bug"):
                raise RuntimeError("a bug")
            case CallMcpTool(id=ask_id, arguments=arguments):
                return McpResult(id=ask_id, text=str(arguments))
            case AskDiagnostics(id=ask_id, path=path):
                return DiagnosticsReport(id=ask_id, path=path, text="Diagnostics:\nx", lines=["x"])
        raise AssertionError(ask)


def test_asks_are_told_from_events_by_their_type_alone() -> None:
    ask = encode_event(CallMcpTool(id=7, name="mcp__a__b", arguments={"n": 1}))
    event = encode_event(Assistant(text="mcp.call_tool", delta=True))
    assert is_ask(ask) and not is_ask(event) and not is_ask(b"\xc1garbage")
    assert decode_worker_frame(ask) == CallMcpTool(id=7, name="mcp__a__b", arguments={"n": 1})
    assert decode_event(event) == Assistant(text="mcp.call_tool", delta=True)
    answer = McpResult(id=7, text="[mcp.server_failed] x", is_error=True, error_code="mcp.server_failed")
    assert decode_command(encode_command(answer)) == answer


async def test_events_pass_through_and_asks_are_answered_beside_them(
        autojump_clock: trio.testing.MockClock) -> None:
    worker, services = MemoryWorker(), Scripted()
    async with served(worker, "s-1", services) as child:
        assert child.pid == worker.pid
        worker.emit(Assistant(text="a", delta=True))
        worker.emit(ListMcpTools(id=1))
        worker.emit(CallMcpTool(id=2, name="mcp__fs__read", arguments={"path": "x"}))
        worker.emit(AskDiagnostics(id=3, path="a.py"))
        worker.emit(Assistant(text="b", delta=True))
        worker.end_stdout()
        passed = [decode_event(frame) async for frame in child.frames()]
        assert passed == [Assistant(text="a", delta=True), Assistant(text="b", delta=True)]
        await trio.testing.wait_all_tasks_blocked()
        answers = {a.id: a for a in _drain(worker)}
    assert answers == {
        1: McpTools(id=1, tools=[McpToolDecl(name="mcp__fs__read")]),
        2: McpResult(id=2, text="{'path': 'x'}"),
        3: DiagnosticsReport(id=3, path="a.py", text="Diagnostics:\nx", lines=["x"]),
    }
    assert {sid for sid, _ in services.seen} == {"s-1"}


async def test_a_slow_ask_holds_up_no_other_and_failures_are_error_answers(
        autojump_clock: trio.testing.MockClock) -> None:
    worker, services = MemoryWorker(), Scripted()
    async with served(worker, "s-1", services) as child, trio.open_nursery() as nursery:
        nursery.start_soon(_consume, child)
        worker.emit(CallMcpTool(id=1, name="mcp__fs__slow"))
        worker.emit(CallMcpTool(id=2, name="mcp__fs__failed"))
        worker.emit(CallMcpTool(id=3, name="mcp__fs__bug"))
        with trio.fail_after(5):
            first, second = await worker.stdin.receive(), await worker.stdin.receive()
        assert {first.id, second.id} == {2, 3}  # type: ignore[union-attr]
        failed = first if first.id == 2 else second  # type: ignore[union-attr]
        bug = second if failed is first else first
        assert failed == McpResult(id=2, text="[mcp.server_failed] fs failed: 3 crashes in 60 s",
                                   is_error=True, error_code="mcp.server_failed")
        assert isinstance(bug, McpResult) and bug.is_error and bug.error_code == "internal"
        services.release.set()
        with trio.fail_after(5):
            assert await worker.stdin.receive() == McpResult(id=1, text="slow")
        worker.die()


async def test_the_end_of_the_child_cancels_its_asks_in_flight(
        autojump_clock: trio.testing.MockClock) -> None:
    worker, services = MemoryWorker(), Scripted()
    async with served(worker, "s-1", services) as child:
        worker.emit(CallMcpTool(id=5, name="mcp__fs__slow"))
        worker.die()
        assert [frame async for frame in child.frames()] == []
        await trio.testing.wait_all_tasks_blocked()
        assert services.cancelled == []
    assert services.cancelled == [5]
    assert _drain(worker) == []


async def test_without_services_asks_get_empty_or_error_answers(
        autojump_clock: trio.testing.MockClock) -> None:
    worker = MemoryWorker()
    async with served(worker, "s-1", NO_SERVICES) as child:
        worker.emit(ListMcpTools(id=1))
        worker.emit(CallMcpTool(id=2, name="mcp__x__y"))
        worker.emit(AskDiagnostics(id=3, path="a.py"))
        worker.end_stdout()
        assert [frame async for frame in child.frames()] == []
        await trio.testing.wait_all_tasks_blocked()
    answers = {a.id: a for a in _drain(worker)}
    assert answers[1] == McpTools(id=1)
    assert isinstance(answers[2], McpResult) and answers[2].error_code == "mcp.unavailable"
    assert answers[3] == DiagnosticsReport(id=3, path="a.py")


async def _consume(child: object) -> None:
    async for _ in child.frames():  # type: ignore[attr-defined]
        pass


def _drain(worker: MemoryWorker) -> list[Answer]:
    out: list[Answer] = []
    while True:
        try:
            out.append(worker.stdin.receive_nowait())  # type: ignore[arg-type]
        except (trio.WouldBlock, trio.EndOfChannel):
            return out
