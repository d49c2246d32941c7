"""Test doubles for the session: a scripted translator and driver, and a child that lives in memory.

The translator speaks the fake harness's vocabulary (event lines in, command lines out), plus
what the fake child cannot show: a handshake (not ``ready`` until an ``init`` arrives), a
goodbye frame, a frame that makes it raise like a buggy translator (``b"boom"``), and
client-side work (``{"type": "work", "id": N, "job": J}`` is handed out as ``Work``; its outcome
goes back to the child as ``{"type": "done", "id": N, "outcome": …}``). The driver's ``spawn``
runs ``MemoryChild``ren instead of processes, so a whole session runs under ``MockClock`` with no
process at all; the test plays the child's part. With ``work=True`` the driver has a ``work_runner``
(``MemoryWorkRunner``) whose jobs the test finishes.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from actors.fake.driver import FakeTranslator
from actors.harness import HarnessRequest, Launch, Output, Send, Work, WorkOutput
from protocol.errors import ChildExited, LaunchFailed
from protocol.events import Init
from protocol.models import Detection, Features
from supervisor.proc.child import Goodbye
from supervisor.proc.spec import ExitStatus, ProcessSpec

GOODBYE = b'{"type":"goodbye"}\n'


def line(**event: Any) -> bytes:
    """One event line as a child writes it."""
    return json.dumps(event).encode()


class ScriptedTranslator(FakeTranslator):
    """The fake vocabulary, with an optional handshake and goodbye, and a bug on ``b"boom"``."""

    def __init__(self, *, handshake: bool, steer: bool, goodbye: bool) -> None:
        super().__init__(steer=steer)
        self._ready = not handshake
        self._goodbye = goodbye

    @property
    def ready(self) -> bool:
        return self._ready

    def receive(self, frame: bytes, now: float) -> list[WorkOutput]:
        if frame == b"boom":
            raise RuntimeError("the translator tripped over its own feet")
        if frame.startswith(b'{"type": "work"'):
            work = json.loads(frame)
            return [Work(id=work["id"], job=work["job"])]
        out: list[WorkOutput] = list(super().receive(frame, now))
        if any(isinstance(event, Init) for event in out):
            self._ready = True
        return out

    def goodbye(self, now: float) -> list[Output]:
        return [Send(data=GOODBYE)] if self._goodbye else []

    def finished(self, work_id: int, outcome: Any, now: float) -> list[WorkOutput]:
        return [Send(data=line(type="done", id=work_id, outcome=outcome) + b"\n")]


class MemoryWorkRunner:
    """A work runner whose jobs wait until the test finishes them: ``finish(job, outcome)``.

    ``opened``/``closed`` count its ``async with`` blocks; ``cancelled`` lists the jobs that were
    abandoned (their child ended first).
    """

    def __init__(self) -> None:
        self.opened = 0
        self.closed = 0
        self.started: list[Any] = []
        self.cancelled: list[Any] = []
        self._results: dict[Any, trio.MemoryReceiveChannel[Any]] = {}
        self._senders: dict[Any, trio.MemorySendChannel[Any]] = {}
        self._changed = trio.Event()

    @asynccontextmanager
    async def block(self) -> AsyncIterator[MemoryWorkRunner]:
        self.opened += 1
        try:
            yield self
        finally:
            self.closed += 1

    async def run(self, job: Any) -> Any:
        send, receive = trio.open_memory_channel[Any](1)
        self._senders[job], self._results[job] = send, receive
        self.started.append(job)
        self._changed.set()
        self._changed = trio.Event()
        try:
            return await receive.receive()
        except trio.Cancelled:
            self.cancelled.append(job)
            raise

    async def wait_started(self, job: Any) -> None:
        with trio.fail_after(600):
            while job not in self.started:
                await self._changed.wait()

    def finish(self, job: Any, outcome: Any) -> None:
        self._senders[job].send_nowait(outcome)


class MemoryChild:
    """A harness child in memory (``actors.session.child.HarnessChild``); the test plays the child.

    ``emit`` writes a stdout line, ``die`` ends it as a crash would; what the session writes is
    in ``received`` (decoded) and can be awaited with ``next_command``. ``close`` sends the
    goodbye, closes stdin (``on_stdin_closed`` runs then, as a child reacting to EOF), and exits
    with status 0, unless ``stubborn``: then it stays until cancelled.
    """

    def __init__(self, pid: int, *, stubborn: bool = False) -> None:
        self.pid = pid
        self.stubborn = stubborn
        self.received: list[dict[str, Any]] = []
        self.stdin_closed = False
        self.status: ExitStatus | None = None
        self.on_stdin_closed: Any = None
        self._out_send, self._out_receive = trio.open_memory_channel[bytes](math.inf)
        self._commands_send, self._commands = trio.open_memory_channel[dict[str, Any]](math.inf)
        self._done = trio.Event()

    async def send(self, data: bytes) -> None:
        if self.stdin_closed or self._done.is_set():
            raise ChildExited(f"child {self.pid} no longer reads its stdin")
        command = json.loads(data)
        self.received.append(command)
        self._commands_send.send_nowait(command)

    def frames(self) -> AsyncIterator[bytes]:
        return self._out_receive.__aiter__()

    async def close(self, goodbye: Goodbye | None = None) -> ExitStatus:
        if not self._done.is_set() and not self.stdin_closed:
            if goodbye is not None:
                await goodbye(self)  # type: ignore[arg-type]
            self.stdin_closed = True
            if self.on_stdin_closed is not None:
                self.on_stdin_closed(self)
            if not self.stubborn:
                self.die(ExitStatus(reason="exited", exit_code=0))
        await self._done.wait()
        assert self.status is not None
        return self.status

    async def wait(self) -> ExitStatus:
        await self._done.wait()
        assert self.status is not None
        return self.status

    # --- the test's side ---

    def emit(self, **event: Any) -> None:
        self._out_send.send_nowait(line(**event))

    def emit_raw(self, data: bytes) -> None:
        self._out_send.send_nowait(data)

    def die(self, status: ExitStatus | None = None) -> None:
        """End the child (stdout closes, then it is gone); by default as SIGKILL would."""
        if self._done.is_set():
            return
        self.status = status or ExitStatus(reason="crashed", signal="SIGKILL")
        self._out_send.close()
        self._done.set()

    async def next_command(self) -> dict[str, Any]:
        with trio.fail_after(60):
            return await self._commands.receive()

    def kinds(self) -> list[str]:
        return [str(command["type"]) for command in self.received]


class ScriptedDriver:
    """A harness whose children are ``MemoryChild``ren; ``children`` lists them in spawn order."""

    name = "scripted"
    features = Features(steer=True, resume=True, permissions=True, interrupt=True, set_model=True)

    def __init__(self, *, handshake: bool = False, steer: bool = True, goodbye: bool = False,
                 stubborn: bool = False, failures: int = 0, work: bool = False) -> None:
        if work:
            self.runners: list[MemoryWorkRunner] = []
            self.work_runner = self._work_runner
        self.handshake = handshake
        self.steer = steer
        self.goodbye = goodbye
        self.stubborn = stubborn
        self.failures = failures
        self.children: list[MemoryChild] = []
        self.spawn_times: list[float] = []
        self.launched: list[HarnessRequest] = []
        self._spawned = trio.Event()

    def launch(self, request: HarnessRequest) -> Launch:
        self.launched.append(request)
        return Launch(argv=["scripted"], env=dict(request.env), cwd=request.cwd)

    def translator(self, request: HarnessRequest) -> ScriptedTranslator:
        return ScriptedTranslator(handshake=self.handshake, steer=self.steer, goodbye=self.goodbye)

    @asynccontextmanager
    async def spawn(self, launch: Launch, spec: ProcessSpec, ledger: Any) -> AsyncIterator[MemoryChild]:
        self.spawn_times.append(trio.current_time())
        if self.failures:
            self.failures -= 1
            raise LaunchFailed("scripted: no such binary")
        child = MemoryChild(1000 + len(self.children), stubborn=self.stubborn)
        self.children.append(child)
        self._spawned.set()
        self._spawned = trio.Event()
        try:
            yield child
        finally:
            child.die(ExitStatus(reason="killed", signal="SIGKILL"))

    def _work_runner(self, request: HarnessRequest, ledger: Any = None) -> Any:
        runner = MemoryWorkRunner()
        self.runners.append(runner)
        return runner.block()

    async def next_child(self, count: int) -> MemoryChild:
        """The ``count``-th child (1-based), once it was spawned."""
        with trio.fail_after(600):
            while len(self.children) < count:
                await self._spawned.wait()
        return self.children[count - 1]

    async def detect(self, *, models: bool = False) -> Detection:
        return Detection(harness=self.name, available=True, version="1", features=self.features)
