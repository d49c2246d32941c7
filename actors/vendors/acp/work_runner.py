"""The I/O side of ACP's client services: files and terminals for one agent child.

``open_work_runner(root, env, state_dir=…, ledger=…, key=…)`` is an async context manager that
spans the agent child's life (the session opens it with the child, see ``actors.harness``);
``run(job)`` does one job from ``jobs`` and returns its outcome, never raising for the job's
own failure.

* Files are read and written only inside ``root`` (the session cwd), symlinks resolved (so
  ``..``, a symlink out and an absolute path elsewhere are all refused), and never inside the
  daemon's ``state_dir`` (its token, ledger and session logs), unless ``root`` itself is a
  worktree under it; a refusal is ``DENIED`` with a message that says why. Only regular files
  are read (a FIFO would block the reading thread for good). A missing file is ``NOT_FOUND``
  (or empty content with ``missing_empty``). Content is read as UTF-8 (bad bytes replaced) and
  at most ``MAX_FILE`` bytes.
* Terminals are process children (``supervisor.proc``, recorded in the crash ledger under
  ``key``, so a daemon crash cannot leave one running): each in its own process group, started
  in a directory inside ``root``, stderr merged into stdout, the output kept as a bounded tail
  (``limit`` bytes, at most ``MAX_OUTPUT``; ``truncated`` says bytes were dropped). Kill,
  release and the end of the block kill the whole group (SIGKILL: a terminal has nothing to
  save) and reap it.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from protocol.errors import CorralError
from supervisor.proc.child import ProcessChild, open_child
from supervisor.proc.spec import ExitStatus, ProcessSpec

from .jobs import (
    DENIED, NOT_FOUND, CloseTerminal, Confinement, Done, Failed, Job, OpenTerminal, Outcome,
    ReadFile, TerminalOutput, WaitTerminal, WriteFile,
)

__all__ = ["MAX_FILE", "MAX_OUTPUT", "AcpWorkRunner", "open_work_runner"]

MAX_FILE = 8 * 1024 * 1024
"""The largest file content passed to an agent (it travels in one JSON-RPC frame)."""
MAX_OUTPUT = 1024 * 1024
"""The most terminal output kept, whatever the agent asks."""
MAX_TERMINALS = 64


@asynccontextmanager
async def open_work_runner(root: str, env: Mapping[str, str], *, state_dir: str | None = None,
                           ledger: Any = None, key: str = "acp") -> AsyncIterator[AcpWorkRunner]:
    """A work runner for one agent child; leaving the block kills every terminal it started.

    ``ledger`` (``supervisor.ledger.store.Ledger``) records each terminal under a key that
    starts with ``key``; ``state_dir`` is refused to every job (see the module docstring).
    """
    async with trio.open_nursery() as nursery:
        runner = AcpWorkRunner(Confinement(root, state_dir), env, nursery, ledger=ledger,
                           key=f"{key}:terminal:{secrets.token_hex(3)}")
        try:
            yield runner
        finally:
            with trio.CancelScope(shield=True):
                await runner.aclose()
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


class AcpWorkRunner:
    """Runs jobs for one agent child; build it with ``open_work_runner``."""

    def __init__(self, root: Confinement, env: Mapping[str, str], nursery: trio.Nursery, *,
                 ledger: Any = None, key: str = "acp:terminal") -> None:
        self._root = root
        self._env = dict(env)
        self._nursery = nursery
        self._ledger = ledger
        self._key = key
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
        refusal = self._root.refusal(job.cwd)
        if refusal is not None:
            return refusal
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
        spec = ProcessSpec(key=f"{self._key}:{tid}", kind="acp-terminal", argv=argv,
                           cwd=job.cwd, env={**self._env, **job.env}, shutdown=0,
                           framing="raw", frame_limit=64 * 1024, death_signal="SIGKILL")
        started = trio.Event()
        failure: list[str] = []

        async def serve() -> None:
            try:
                async with open_child(spec, ledger=self._ledger) as child:
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


def _read(root: Confinement, job: ReadFile) -> Outcome:
    refusal = root.refusal(job.path)
    if refusal is not None:
        return refusal
    try:
        fd = os.open(job.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        if job.missing_empty:
            return Done({"content": ""})
        return Failed(NOT_FOUND, f"{job.path} does not exist")
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return Failed(DENIED, f"{job.path} is not a regular file")
        data = handle.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        return Failed(DENIED, f"{job.path} is larger than {MAX_FILE} bytes")
    text = data.decode("utf-8", "replace")
    if job.line is not None or job.limit is not None:
        lines = text.splitlines(keepends=True)
        start = max((job.line or 1) - 1, 0)
        end = None if job.limit is None else start + max(job.limit, 0)
        text = "".join(lines[start:end])
    return Done({"content": text})


def _write(root: Confinement, job: WriteFile) -> Outcome:
    refusal = root.refusal(job.path)
    if refusal is not None:
        return refusal
    parent = os.path.dirname(job.path)
    os.makedirs(parent, exist_ok=True)
    refusal = root.refusal(parent)
    if refusal is not None:
        return refusal
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(job.path, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(job.content)
    return Done(None)
