"""A minimal stand-in for the session: run a real ACP agent with our launch builder, translator
and work runner, against the fake model server, without a daemon. It does what ``actors.harness``
asks of a session that runs ``Work``: jobs run concurrently beside the frame loop and their
outcomes go back through ``translator.finished``; the work runner is closed with the child.

Used by the live tests and by ``record.py``, which writes every line to a recording:
``{"dir": "meta", ...}`` first, then in order ``{"dir": "call", "call": NAME, "args": [...]}``
for each translator call, ``{"dir": "send", "frame": ...}`` for each line written to the agent,
``{"dir": "recv", "frame": ...}`` for each line it wrote, and ``{"dir": "work", "id": N,
"outcome": ...}`` for each finished job.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import trio

from actors.harness import HarnessRequest, Send, Work
from actors.vendors.acp import PROFILES, AcpDriver
from protocol.events import Event

__all__ = ["LiveAcp"]


class LiveAcp:
    """One agent child driven by an ACP translator; events land in ``events``."""

    def __init__(self, agent: str, request: HarnessRequest, *, stderr_path: Path,
                 record: Callable[[dict[str, Any]], None] | None = None,
                 driver: AcpDriver | None = None) -> None:
        self.agent = agent
        self.request = request
        self.driver = driver if driver is not None else AcpDriver(PROFILES[agent])
        self.launch = self.driver.launch(request)
        self.translator = self.driver.translator(request)
        self.events: list[Event] = []
        self.process: trio.Process | None = None
        self._stderr_path = stderr_path
        self._record = record or (lambda line: None)
        self._changed = trio.Event()
        self._lock = trio.Lock()
        self._eof = False
        self._nursery: trio.Nursery | None = None
        self._runner: Any = None

    async def run(self, *, task_status: trio.TaskStatus[LiveAcp] = trio.TASK_STATUS_IGNORED) -> None:
        """Spawn the child, send the handshake, pump stdout until EOF."""
        env = {**os.environ, **self.launch.env}
        with open(self._stderr_path, "wb") as stderr:
            self.process = await trio.lowlevel.open_process(
                self.launch.argv, env=env, cwd=self.launch.cwd, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=stderr, start_new_session=True)
        public = msgspec.structs.replace(self.request, env={})
        self._record({"dir": "meta", "agent": self.agent, "argv0": Path(self.launch.argv[0]).name,
                      "request": msgspec.to_builtins(public)})
        try:
            async with self.driver.work_runner(self.request) as runner, trio.open_nursery() as nursery:
                self._runner, self._nursery = runner, nursery
                await self.call("start")
                task_status.started(self)
                await self._pump()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await self.close()

    async def call(self, name: str, *args: Any) -> list[Any]:
        """Invoke a translator method (``start``, ``prompt``, ``decide``, …) and act on its output."""
        self._record({"dir": "call", "call": name, "args": list(args)})
        outputs = getattr(self.translator, name)(*args, 0.0)
        if outputs is not None:
            await self._handle(outputs)
        return outputs or []

    async def wait_for(self, predicate: Callable[[Event], bool], start: int = 0) -> Event:
        """The first event at index ``start`` or later that matches ``predicate``."""
        return self.events[await self.index_of(predicate, start)]

    async def index_of(self, predicate: Callable[[Event], bool], start: int = 0) -> int:
        """The index of the first event at ``start`` or later that matches ``predicate``."""
        while True:
            for index in range(start, len(self.events)):
                if predicate(self.events[index]):
                    return index
            if self._eof:
                raise EOFError("the agent exited before the expected event")
            await self._changed.wait()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` holds; re-checked after every line the agent writes."""
        while not predicate():
            if self._eof:
                raise EOFError("the agent exited before the condition held")
            await self._changed.wait()

    async def close(self) -> None:
        """Close stdin, wait a little, then kill the process group."""
        process = self.process
        if process is None:
            return
        if process.stdin is not None:
            await process.stdin.aclose()
        with trio.move_on_after(3):
            await process.wait()
        if process.returncode is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await process.wait()

    async def _handle(self, outputs: list[Any]) -> None:
        for out in outputs:
            if isinstance(out, Send):
                await self._send(out.data)
            elif isinstance(out, Work):
                assert self._nursery is not None
                self._nursery.start_soon(self._run_work, out)
            else:
                self.events.append(out)
        self._notify()

    async def _run_work(self, work: Work) -> None:
        outcome = await self._runner.run(work.job)
        self._record({"dir": "work", "id": work.id, "outcome": msgspec.to_builtins(outcome),
                      "kind": type(outcome).__name__})
        outputs = self.translator.finished(work.id, outcome, 0.0)
        await self._handle(outputs)

    async def _send(self, data: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        self._record({"dir": "send", "frame": json.loads(data)})
        async with self._lock:
            await self.process.stdin.send_all(data)

    async def _pump(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        buffer = b""
        async for chunk in self.process.stdout:
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if not line.strip():
                    continue
                try:
                    self._record({"dir": "recv", "frame": json.loads(line)})
                except ValueError:
                    self._record({"dir": "recv", "text": line.decode("utf-8", "replace")})
                await self._handle(self.translator.receive(line, 0.0))
        self._eof = True
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()
