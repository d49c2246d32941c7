"""A minimal stand-in for the session: run the real ``pi --mode rpc`` with our launch builder
and translator, against the fake model server, without a daemon. Used by the live test and by
``record.py`` (which also writes every frame and call to a recording).

Recording lines: ``{"dir": "meta", ...}`` first, then in order ``{"dir": "call", "call": NAME,
"args": [...]}`` for each translator call, ``{"dir": "send", "frame": ...}`` for each line the
translator produced and ``{"dir": "recv", "frame": ...}`` for each line pi wrote.
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

from actors.harness import HarnessRequest, Output, Send
from actors.vendors.pi import PiTranslator, build_launch
from protocol.events import Event
from protocol.models import Permissions
from tests.fakes.pi_offline import MODEL, offline_env, pi_binary, write_home

__all__ = ["LivePi", "make_request", "pi_binary"]


def make_request(tmp: Path, port: int, binary: str, **fields: Any) -> HarnessRequest:
    """A request for a session in ``tmp/work`` with an isolated HOME and pi config home."""
    for name in ("work", "run"):
        (tmp / name).mkdir(exist_ok=True)
    write_home(tmp / "pi_home", port)
    options = {"binary": binary, "home": str(tmp / "pi_home"), **fields.pop("options", {})}
    env = {**offline_env(tmp), **fields.pop("env", {})}
    permissions = fields.pop("permissions", Permissions(mode="auto"))
    return HarnessRequest(session_id="s-test", cwd=str(tmp / "work"), model=MODEL, env=env,
                          options=options, work_dir=str(tmp / "run"), permissions=permissions,
                          **fields)


class LivePi:
    """One pi child driven by a translator; events land in ``events`` as they arrive."""

    def __init__(self, request: HarnessRequest, *, stderr_path: Path,
                 record: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.request = request
        self.launch = build_launch(request)
        self.translator = PiTranslator(request)
        self.events: list[Event] = []
        self.process: trio.Process | None = None
        self._stderr_path = stderr_path
        self._record = record or (lambda line: None)
        self._changed = trio.Event()
        self._lock = trio.Lock()
        self._eof = False

    async def run(self, *, task_status: trio.TaskStatus[LivePi] = trio.TASK_STATUS_IGNORED) -> None:
        """Spawn the child, send ``start``, pump stdout until EOF."""
        env = {**os.environ, **self.launch.env}
        with open(self._stderr_path, "wb") as stderr:
            self.process = await trio.lowlevel.open_process(
                self.launch.argv, env=env, cwd=self.launch.cwd, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=stderr, start_new_session=True)
        public = msgspec.structs.replace(self.request, env={})
        self._record({"dir": "meta", "argv0": Path(self.launch.argv[0]).name,
                      "request": msgspec.to_builtins(public)})
        try:
            await self.call("start")
            task_status.started(self)
            await self._pump()
        finally:
            with trio.CancelScope(shield=True):
                await self.close()
                if self.process.stdout is not None:
                    await self.process.stdout.aclose()

    async def call(self, name: str, *args: Any) -> list[Output]:
        """Invoke a translator method (``prompt``, ``decide``, …) and act on its output."""
        self._record({"dir": "call", "call": name, "args": list(args)})
        outputs = getattr(self.translator, name)(*args, 0.0)
        if outputs is not None:
            await self._handle(outputs)
        return outputs or []

    async def wait_for(self, predicate: Callable[[Event], bool], start: int = 0) -> Event:
        """The first event at index ``start`` or later that matches ``predicate``."""
        while True:
            for event in self.events[start:]:
                if predicate(event):
                    return event
            if self._eof:
                raise EOFError("pi exited before the expected event")
            await self._changed.wait()

    async def close(self) -> None:
        """Close stdin (pi exits on EOF), wait a little, then kill the process group."""
        process = self.process
        if process is None:
            return
        if process.stdin is not None:
            await process.stdin.aclose()
        with trio.move_on_after(5):
            await process.wait()
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
            await process.wait()

    async def _handle(self, outputs: list[Output]) -> None:
        for output in outputs:
            if isinstance(output, Send):
                self._record({"dir": "send", "frame": json.loads(output.data)})
                if self.process is None or self.process.stdin is None:
                    raise RuntimeError("pi is not running")
                async with self._lock:
                    await self.process.stdin.send_all(output.data)
            else:
                self.events.append(output)
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _pump(self) -> None:
        if self.process is None or self.process.stdout is None:
            raise RuntimeError("pi is not running")
        buffer = b""
        try:
            while True:
                chunk = await self.process.stdout.receive_some(1 << 16)
                if not chunk:
                    return
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        self._record({"dir": "recv", "frame": json.loads(line)})
                        await self._handle(self.translator.receive(line, 0.0))
        finally:
            self._eof = True
            self._notify()
