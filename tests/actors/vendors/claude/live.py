"""A minimal stand-in for the session: the real Claude Code CLI, started from our launch builder and
driven by our translator, against the fake Anthropic server. No daemon. Used by the live test and
by ``record.py``, which writes every call and frame to a recording.

Recording lines (NDJSON): a ``{"dir": "meta", ...}`` header (CLI version, the request without
its env), then in order ``{"dir": "call", "call": NAME, "args": {...}}`` for each translator
command, ``{"dir": "send", "raw": LINE}`` for each frame the translator produced and
``{"dir": "recv", "raw": LINE}`` for each line the CLI wrote. ``raw`` is the exact line (no
newline), so replays are byte-level.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from actors.harness import HarnessRequest, Output, Send
from actors.vendors.claude import ClaudeTranslator, build_launch
from protocol.events import Event
from tests.fakes.claude_offline import INSTALL_HINT, claude_binary, offline_env

Recorder = Callable[[dict[str, Any]], None]


def require_claude() -> str:
    """The binary, or skip the test (fail under ``CI``, where the CLI must be installed)."""
    binary = claude_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(f"Claude Code is not installed ({INSTALL_HINT})")
        pytest.skip(f"Claude Code is not installed ({INSTALL_HINT})")
    return binary


def uuids(base: int = 0) -> Callable[[], str]:
    """Deterministic uuids for user lines, so a replay produces the recorded bytes.

    Each process of one Claude session needs its own ``base``: the CLI silently drops a user
    line whose uuid is already in the session's transcript (no turn, no result).
    """
    counter = itertools.count(1)
    return lambda: f"00000000-0000-4000-8{base:03d}-{next(counter):012d}"


def make_request(tmp: Path, port: int, binary: str, **fields: Any) -> HarnessRequest:
    """A session in ``tmp/work`` with an isolated HOME and config home, pointed at the fake server."""
    for name in ("work", "home", "run"):
        (tmp / name).mkdir(exist_ok=True)
    options = {"binary": binary, "home": str(tmp / "home" / ".claude"), **fields.pop("options", {})}
    env = {**offline_env(port), "HOME": str(tmp / "home"), **fields.pop("env", {})}
    return HarnessRequest(session_id="s-test", cwd=str(tmp / "work"), env=env, options=options,
                          work_dir=str(tmp / "run"), **fields)


class LiveClaude:
    """One Claude child driven by a translator; translated events land in ``events``."""

    def __init__(self, request: HarnessRequest, *, stderr_path: Path, record: Recorder | None = None,
                 uuid_base: int = 0) -> None:
        self.request = request
        self.launch = build_launch(request)
        self.translator = ClaudeTranslator(request, new_uuid=uuids(uuid_base))
        self.events: list[Event] = []
        self._record = record or (lambda entry: None)
        self._stderr_path = stderr_path
        self._changed = trio.Event()
        self._process: trio.Process | None = None
        self._send_lock = trio.Lock()
        self._exited = False

    async def run(self, *, task_status: trio.TaskStatus[LiveClaude] = trio.TASK_STATUS_IGNORED) -> None:
        """Spawn the child and pump its stdout through the translator until it exits."""
        for path, content in self.launch.files.items():
            Path(path).write_text(content)
            os.chmod(path, 0o600)
        with open(self._stderr_path, "wb") as stderr:
            process = await trio.lowlevel.open_process(
                self.launch.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                cwd=self.launch.cwd, env={**os.environ, **self.launch.env}, start_new_session=True)
        self._process = process
        try:
            await self._handle(self.translator.start(trio.current_time()))
            task_status.started(self)
            assert process.stdout is not None
            buffer = b""
            while chunk := await process.stdout.receive_some(1 << 16):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    self._record({"dir": "recv", "raw": line.decode()})
                    await self._handle(self.translator.receive(line, trio.current_time()))
            await process.wait()
        finally:
            with trio.CancelScope(shield=True):
                await self._kill(process)
            self._exited = True
            self._changed.set()

    async def call(self, name: str, **args: Any) -> list[Output] | None:
        """Call a translator command (``prompt``, ``steer``, …) and send what it produced."""
        self._record({"dir": "call", "call": name, "args": args})
        outputs: list[Output] | None = getattr(self.translator, name)(**args, now=trio.current_time())
        await self._handle(outputs or [])
        return outputs

    async def wait_for(self, predicate: Callable[[Event], bool], start: int = 0) -> Event:
        """The first event from index ``start`` on that satisfies ``predicate`` (waits for it)."""
        index = start
        while True:
            while index < len(self.events):
                if predicate(self.events[index]):
                    return self.events[index]
                index += 1
            self._check_alive()
            await self._changed.wait()

    async def wait_ready(self) -> None:
        """Wait until the translator says the child can take a prompt."""
        while not self.translator.ready:
            self._check_alive()
            await self._changed.wait()

    async def close(self) -> int:
        """Send the translator's goodbye, close stdin, and wait for the exit code."""
        process = self._process
        assert process is not None and process.stdin is not None
        await self._handle(self.translator.goodbye(trio.current_time()))
        await process.stdin.aclose()
        return await process.wait()

    def _check_alive(self) -> None:
        if self._exited:
            stderr = self._stderr_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"claude exited before the awaited event; stderr: {stderr}")

    async def _handle(self, outputs: list[Output]) -> None:
        for out in outputs:
            if isinstance(out, Send):
                self._record({"dir": "send", "raw": out.data.rstrip(b"\n").decode()})
                process = self._process
                assert process is not None and process.stdin is not None
                async with self._send_lock:
                    await process.stdin.send_all(out.data)
            else:
                self.events.append(out)
        self._changed.set()
        self._changed = trio.Event()

    @staticmethod
    async def _kill(process: trio.Process) -> None:
        if process.returncode is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        await process.wait()


def meta(request: HarnessRequest, version: str, scenario: str, uuid_base: int = 0) -> dict[str, Any]:
    """The header line of a recording: the request as built, minus its env (secrets)."""
    fields = msgspec.to_builtins(request)
    fields.pop("env", None)
    return {"dir": "meta", "scenario": scenario, "claude_version": version, "uuid_base": uuid_base,
            "request": fields}


def events_json(events: list[Event]) -> str:
    """Events as JSON lines, for readable assertion failures."""
    return "\n".join(json.dumps(msgspec.to_builtins(e)) for e in events)
