"""Running command hooks: ``/bin/sh -c COMMAND`` in the session's cwd, bounded in time and output.

Each hook runs in a new process group with the event's JSON on stdin and
``CLAUDE_PROJECT_DIR`` set to the cwd (scripts written for Claude Code use it). Its stdout and
stderr are kept up to ``_OUTPUT_LIMIT`` bytes each (the rest is read and dropped, so a chatty
hook cannot block on a full pipe). After its ``timeout`` the whole group is killed and the run
is a timeout. Cancellation (an interrupted turn) kills the group too, then propagates.

``Hooks.run`` runs the selected commands of one event in order and folds their outcomes: the
first block wins (later hooks do not run), each ``updatedInput`` replaces the input the next
hook sees, and warnings are collected.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from typing import Any

from actors.native.context.hooks import HookOutcome, interpret, payload, select
from protocol.native_context import HookCommand, HookEvent, HookMatcher

__all__ = ["Hooks", "RunResult", "run_command"]

_OUTPUT_LIMIT = 256 * 1024

RunResult = tuple[int | None, str, str, bool]
"""``(exit status, stdout, stderr, timed out)``."""


async def run_command(command: str, stdin: bytes, *, cwd: str, timeout: float,
                      environ: Mapping[str, str]) -> RunResult:
    """Run one hook command (see the module docstring)."""
    env = {**environ, "CLAUDE_PROJECT_DIR": cwd}
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=cwd, env=env,
        start_new_session=True)
    try:
        async with asyncio.timeout(timeout):
            out, err, _ = await asyncio.gather(_read(proc.stdout), _read(proc.stderr),
                                               _feed(proc.stdin, stdin))
            code = await proc.wait()
        return code, out, err, False
    except TimeoutError:
        _kill(proc.pid)
        await proc.wait()
        return None, "", "", True
    finally:
        if proc.returncode is None:  # cancelled
            _kill(proc.pid)
            with contextlib.suppress(ProcessLookupError):
                await asyncio.shield(proc.wait())


class Hooks:
    """The hooks of one session and the environment they run in."""

    def __init__(self, hooks: Mapping[HookEvent, list[HookMatcher]], *, cwd: str,
                 session_id: str, environ: Mapping[str, str]) -> None:
        self._hooks = hooks
        self._cwd = cwd
        self.session_id = session_id
        self._environ = environ

    def __bool__(self) -> bool:
        return any(self._hooks.values())

    async def run(self, event: HookEvent, *, tool: str | None = None, match: str | None = None,
                  **fields: Any) -> tuple[HookOutcome, list[str]]:
        """Run ``event``'s hooks; the folded outcome and the warnings. Matchers are matched
        against ``tool`` (Claude's name for it), or ``match`` for an event without a tool
        (PreCompact's ``manual``/``auto``)."""
        commands: list[HookCommand] = select(self._hooks, event, tool if tool is not None else match)
        warnings: list[str] = []
        updated: dict[str, Any] | None = None
        for hook in commands:
            if tool is not None:
                fields["tool_name"] = tool
            stdin = payload(event, session_id=self.session_id, cwd=self._cwd, **fields)
            code, out, err, late = await run_command(hook.command, stdin, cwd=self._cwd,
                                                     timeout=hook.timeout, environ=self._environ)
            outcome = interpret(hook.command, exit_code=code, stdout=out, stderr=err,
                                timed_out=late)
            if outcome.warning:
                warnings.append(outcome.warning)
            if outcome.block:
                return outcome, warnings
            if outcome.updated_input is not None:
                updated = outcome.updated_input
                fields["tool_input"] = updated
        return HookOutcome(updated_input=updated), warnings


async def _read(stream: asyncio.StreamReader | None) -> str:
    if stream is None:
        return ""
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < _OUTPUT_LIMIT:
            kept += chunk[:_OUTPUT_LIMIT - len(kept)]
    return kept.decode("utf-8", "replace")


async def _feed(stream: asyncio.StreamWriter | None, data: bytes) -> None:
    if stream is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stream.write(data)
        await stream.drain()
    stream.close()


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
