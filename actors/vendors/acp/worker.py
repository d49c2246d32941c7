"""The I/O side of ACP's client services: files and terminals for one agent child.

``open_worker(root, env)`` is an async context manager that spans the agent child's life (the
session opens it with the child, see ``actors.harness``); ``run(job)`` does one job from
``jobs`` and returns its outcome, never raising for the job's own failure.

* Files are read and written only inside ``root`` (the session cwd), symlinks resolved; a
  missing file is ``NOT_FOUND`` (or empty content with ``missing_empty``). Content is read as
  UTF-8 (bad bytes replaced) and at most ``MAX_FILE`` bytes.
* Terminals are process children (``supervisor.proc``): each in its own process group, started
  in a directory inside ``root``, stderr merged into stdout, the output kept as a bounded tail
  (``limit`` bytes, at most ``MAX_OUTPUT``; ``truncated`` says bytes were dropped). Kill,
  release and the end of the block kill the whole group (SIGKILL: a terminal has nothing to
  save) and reap it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from protocol.errors import CorralError
from supervisor.proc.child import ProcessChild, open_child
from supervisor.proc.spec import ExitStatus, ProcessSpec

from .jobs import (
    DENIED, NOT_FOUND, CloseTerminal, Done, Failed, Job, OpenTerminal, Outcome, ReadFile,
    TerminalOutput, WaitTerminal, WriteFile, inside,
)

__all__ = ["MAX_FILE", "MAX_OUTPUT", "AcpWorker", "open_worker"]

MAX_FILE = 8 * 1024 * 1024
"""The largest file content passed to an agent (it travels in one JSON-RPC frame)."""
MAX_OUTPUT = 1024 * 1024
"""The most terminal output kept, whatever the agent asks."""
MAX_TERMINALS = 64


@asynccontextmanager
async def open_worker(root: str, env: Mapping[str, str]) -> AsyncIterator[AcpWorker]:
    """A worker for one agent child; leaving the block kills every terminal it started."""
    async with trio.open_nursery() as nursery:
        worker = AcpWorker(root, env, nursery)
        try:
            yield worker
        finally:
            with trio.CancelScope(shield=True):
                await worker.aclose()
            nursery.cancel_scope.cancel()


class _Terminal:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.tail = bytearray()
        self.truncated = False
        self.child: ProcessChild | None = None
        self.status: ExitStatus | None = None
        self.exited = trio.Event()
        self.stop = trio.Event()

    def add(self, data: bytes) -> None:
        self.tail += data
        if len(self.tail) > self.limit:
            del self.tail[:len(self.tail) - self.limit]
            self.truncated = True

    def text(self) -> str:
        data = bytes(self.tail)
        if self.truncated:  # the cut may have split a character: drop its continuation bytes
            start = 0
            while start < len(data) and start < 4 and (data[start] & 0xC0) == 0x80:
                start += 1
            data = data[start:]
        return data.decode("utf-8", "replace")

    def exit_status(self) -> dict[str, Any] | None:
        if self.status is None:
            return None
        return {"exitCode": self.status.exit_code, "signal": self.status.signal}


class AcpWorker:
    """Runs jobs for one agent child; build it with ``open_worker``."""

    def __init__(self, root: str, env: Mapping[str, str], nursery: trio.Nursery) -> None:
        self._root = root
        self._env = dict(env)
        self._nursery = nursery
        self._terminals: dict[str, _Terminal] = {}
        self._count = 0

    async def run(self, job: Job) -> Outcome:
        """Do ``job``; its failure is a ``Failed`` outcome."""
        try:
            match job:
                case ReadFile():
                    return await trio.to_thread.run_sync(_read, self._root, job)
                case WriteFile():
                    return await trio.to_thread.run_sync(_write, self._root, job)
                case OpenTerminal():
                    return await self._open(job)
                case TerminalOutput(terminal_id=tid):
                    term = self._terminals.get(tid)
                    if term is None:
                        return _no_terminal(tid)
                    return Done({"output": term.text(), "truncated": term.truncated,
                                 "exitStatus": term.exit_status()})
                case WaitTerminal(terminal_id=tid):
                    term = self._terminals.get(tid)
                    if term is None:
                        return _no_terminal(tid)
                    await term.exited.wait()
                    return Done(term.exit_status())
                case CloseTerminal(terminal_id=tid, release=release):
                    term = self._terminals.get(tid)
                    if term is None:
                        return _no_terminal(tid)
                    await self._kill(term)
                    if release:
                        del self._terminals[tid]
                    return Done(None)
        except OSError as exc:
            return Failed(DENIED, f"{type(exc).__name__}: {exc.strerror or exc}")

    async def aclose(self) -> None:
        """Kill every terminal's process group and reap it (bounded by their close sequences)."""
        for term in list(self._terminals.values()):
            await self._kill(term)
        self._terminals.clear()

    async def _open(self, job: OpenTerminal) -> Outcome:
        if not inside(self._root, job.cwd):
            return Failed(DENIED, f"{job.cwd} is outside the session's working directory")
        if len(self._terminals) >= MAX_TERMINALS:
            return Failed(DENIED, f"too many terminals (at most {MAX_TERMINALS})")
        self._count += 1
        tid = f"term-{self._count}"
        term = _Terminal(max(1, min(job.limit, MAX_OUTPUT)))
        # stderr joins stdout; a command without args is a shell line (as agents send it).
        if job.args:
            argv = ["/bin/sh", "-c", 'exec "$@" 2>&1', "sh", job.command, *job.args]
        else:
            argv = ["/bin/sh", "-c", f"{{ {job.command}\n}} 2>&1"]
        spec = ProcessSpec(key=f"acp-terminal:{tid}", kind="acp-terminal", argv=argv,
                           cwd=job.cwd, env={**self._env, **job.env}, shutdown=0,
                           framing="raw", frame_limit=64 * 1024, death_signal="SIGKILL")
        started = trio.Event()
        failure: list[str] = []

        async def serve() -> None:
            try:
                async with open_child(spec) as child:
                    term.child = child
                    started.set()
                    async with trio.open_nursery() as inner:
                        inner.start_soon(_stop_on, term, child)
                        async for chunk in child.frames():
                            term.add(chunk)
                        term.status = await child.wait()
                        inner.cancel_scope.cancel()
            except CorralError as exc:
                failure.append(exc.message)
            finally:
                term.exited.set()
                started.set()

        self._nursery.start_soon(serve)
        await started.wait()
        if failure:
            return Failed(DENIED, f"the terminal could not start: {failure[0]}")
        self._terminals[tid] = term
        return Done({"terminalId": tid})

    @staticmethod
    async def _kill(term: _Terminal) -> None:
        term.stop.set()
        await term.exited.wait()


async def _stop_on(term: _Terminal, child: ProcessChild) -> None:
    await term.stop.wait()
    child.kill_group()
    term.status = await child.close()


def _no_terminal(tid: str) -> Failed:
    return Failed(NOT_FOUND, f"no terminal {tid!r}")


def _read(root: str, job: ReadFile) -> Outcome:
    if not inside(root, job.path):
        return Failed(DENIED, f"{job.path} is outside the session's working directory")
    try:
        with open(job.path, "rb") as handle:
            data = handle.read(MAX_FILE + 1)
    except FileNotFoundError:
        if job.missing_empty:
            return Done({"content": ""})
        return Failed(NOT_FOUND, f"{job.path} does not exist")
    if len(data) > MAX_FILE:
        return Failed(DENIED, f"{job.path} is larger than {MAX_FILE} bytes")
    text = data.decode("utf-8", "replace")
    if job.line is not None or job.limit is not None:
        lines = text.splitlines(keepends=True)
        start = max((job.line or 1) - 1, 0)
        end = None if job.limit is None else start + max(job.limit, 0)
        text = "".join(lines[start:end])
    return Done({"content": text})


def _write(root: str, job: WriteFile) -> Outcome:
    if not inside(root, job.path):
        return Failed(DENIED, f"{job.path} is outside the session's working directory")
    parent = os.path.dirname(job.path)
    os.makedirs(parent, exist_ok=True)
    if not inside(root, parent):
        return Failed(DENIED, f"{job.path} is outside the session's working directory")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(job.path, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(job.content)
    return Done(None)
