"""A minimal stand-in for the session: run the real ``codex app-server`` with our launch builder
and translator, against the fake OpenAI server, without a daemon. Used by the live test and by
``record.py`` (which also writes every frame and call to a recording).

Recording lines: ``{"dir": "meta", ...}`` first, then in order ``{"dir": "call", "call": NAME,
"args": {...}}`` for each translator call, ``{"dir": "send", "frame": ...}`` for each frame the
translator produced and ``{"dir": "recv", "frame": ...}`` for each line Codex wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import trio

from protocol.models import Permissions
from actors.harness import HarnessRequest, Output, Send
from actors.vendors.codex import CodexTranslator, build_launch
from protocol.events import Event
from tests.fakes.codex_offline import KEY_ENV, codex_binary, offline_args, offline_env

__all__ = ["KEY_ENV", "LiveCodex", "available", "codex_binary", "make_request", "offline_args",
           "stderr_tail"]


def make_request(tmp: Path, port: int, binary: str, **fields: Any) -> HarnessRequest:
    """A request for a session in ``tmp/work`` with an isolated HOME and CODEX_HOME."""
    for name in ("work", "home", "codex_home", "run"):
        (tmp / name).mkdir(exist_ok=True)
    options = {"binary": binary, "home": str(tmp / "codex_home"),
               "extra_args": offline_args(port), **fields.pop("options", {})}
    env = {"HOME": str(tmp / "home"), KEY_ENV: "sk-test-fake", **offline_env(tmp / "codex_home"),
           **fields.pop("env", {})}
    # auto_edit (on-request): sandboxed commands run unasked, escalations ask; ``ask`` would
    # make Codex ask for every command (untrusted).
    permissions = fields.pop("permissions", Permissions(mode="auto_edit"))
    return HarnessRequest(session_id="s-test", cwd=str(tmp / "work"), model="gpt-5.5",
                          env=env, options=options, work_dir=str(tmp / "run"),
                          permissions=permissions, **fields)


class LiveCodex:
    """One Codex child driven by a translator; events land in ``events`` as they arrive."""

    def __init__(self, request: HarnessRequest, *, stderr_path: Path,
                 record: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.request = request
        self.launch = build_launch(request)
        self.translator = CodexTranslator(request, client_version="0.1.0")
        self.events: list[Event] = []
        self.process: trio.Process | None = None
        self._stderr_path = stderr_path
        self._record = record or (lambda line: None)
        self._changed = trio.Event()
        self._lock = trio.Lock()
        self._eof = False

    async def run(self, *, task_status: trio.TaskStatus[LiveCodex] = trio.TASK_STATUS_IGNORED) -> None:
        """Spawn the child, send the handshake, pump stdout until EOF."""
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "CODEX_API_KEY")}
        env.update(self.launch.env)
        with open(self._stderr_path, "wb") as stderr:
            self.process = await trio.lowlevel.open_process(
                self.launch.argv, env=env, cwd=self.launch.cwd, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=stderr, start_new_session=True)
        # Recordings keep no secret: env values (session and MCP) are dropped.
        servers = [msgspec.structs.replace(s, env=dict.fromkeys(s.env, "***"))
                   for s in self.request.mcp_servers]
        public = msgspec.structs.replace(self.request, env={}, mcp_servers=servers)
        self._record({"dir": "meta", "argv0": Path(self.launch.argv[0]).name,
                      "request": msgspec.to_builtins(public)})
        try:
            await self.call("start")
            task_status.started(self)
            await self._pump()
        finally:
            with trio.CancelScope(shield=True):
                await self.close()

    async def call(self, name: str, *args: Any) -> list[Output]:
        """Invoke a translator method (``start``, ``prompt``, ``decide``, …) and act on its output."""
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
                raise EOFError("codex exited before the expected event")
            await self._changed.wait()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` holds; re-checked after every frame Codex writes."""
        while not predicate():
            if self._eof:
                raise EOFError("codex exited before the condition held")
            await self._changed.wait()

    async def close(self) -> None:
        """Close stdin, wait a little, then kill the process group."""
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
                assert self.process is not None and self.process.stdin is not None
                async with self._lock:
                    await self.process.stdin.send_all(output.data)
            else:
                self.events.append(output)
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _pump(self) -> None:
        assert self.process is not None and self.process.stdout is not None
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


def stderr_tail(path: Path, limit: int = 4000) -> str:
    """The end of a child's stderr, for failure messages."""
    return path.read_text(errors="replace")[-limit:] if path.exists() else ""


def available() -> bool:
    """Whether a Codex binary is installed here."""
    return codex_binary() is not None or shutil.which("codex") is not None
