"""OS-process children: spawn one, talk to it in frames, and always end it the same bounded way.

Use ``async with open_child(spec, ledger=ledger) as child`` (or ``await nursery.start(run_child,
spec)``). On entry the child is forked in a new session (``supervisor.proc.spawn``) with the
environment marker, and its ledger row is on disk before the handle is returned (``ledger`` is any
``SpawnRecorder``, ``supervisor.proc.recorder``: in the daemon, the crash ledger). Two
background tasks run from the fork on: stderr lines into a ring (``child.stderr_tail()``) and
the ``corral.child`` log, and an exit watcher on a pidfd. Stdout is read by whoever takes the
frames (``child.frames()``), in its own task: a frame reaches its consumer without a hop through
another task, and a consumer that stops taking frames stops the pipe, and so the child. On exit the close sequence runs, shielded, whatever ended
the block; if the ledger row could not be written (or the entry was cancelled), the child is
never handed over and the close sequence runs as a brutal kill.

The close sequence starts once, from whichever comes first: ``close()`` (or leaving the block),
the leader exiting on its own, a framing error, and everyone else waits for it: goodbye, SIGTERM
and SIGKILL to the group and the whole family (``supervisor.proc.closing``, which holds its
theory of operation), then the leader is reaped and its ledger row dropped. ``wait()`` returns
after that, so a supervisor that restarts a child never overlaps the old one. ``shutdown=0`` is
OTP's brutal kill. The exit status is read (``waitid(WNOWAIT)``) when the leader exits, before
it is reaped.
"""

from __future__ import annotations

import collections
import functools
import itertools
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
import trio

from protocol.errors import ChildExited, FrameTooLarge, ProtocolError
from protocol.framing import Framer, FramerFactory
from supervisor.excgroup import raise_lone
from supervisor.proc import reaper
from supervisor.proc.pipes import (
    FrameIterator,
    block_until_exited,
    framer_factory,
    open_pidfd,
    read_stderr_lines,
    receive_chunk,
    status_of,
    write_all,
    write_nowait,
)
from supervisor.proc.identity import child_env, marker_env
from supervisor.proc.closing import terminate
from supervisor.proc.killing import forget_signalled, signal_group, was_signalled
from supervisor.proc.spawn import Spawned, Spawner, spawn
from supervisor.proc.recorder import SpawnRecorder
from supervisor.proc.spec import ExitReason as ExitReason
from supervisor.proc.spec import ExitStatus as ExitStatus
from supervisor.proc.spec import Framing as Framing
from supervisor.proc.spec import ProcessSpec as ProcessSpec
from supervisor.proc.spec import redact, returncode, validate

Goodbye = Callable[["ProcessChild"], Awaitable[None]]
"""A protocol's own goodbye, e.g. a shutdown request; ``close`` closes stdin after it."""

logger = logging.getLogger("corral.child")

_SEQUENCE = itertools.count(1)


@asynccontextmanager
async def open_child(
    spec: ProcessSpec,
    *,
    ledger: SpawnRecorder | None = None,
    framer: FramerFactory | None = None,
    goodbye: Goodbye | None = None,
    spawner: Spawner | None = None,
) -> AsyncIterator[ProcessChild]:
    """Spawn ``spec``, record it in ``ledger``, yield its handle, and close it on the way out.

    ``framer`` overrides ``spec.framing``; ``goodbye`` is used by the close sequence when the
    block ends; ``spawner`` replaces ``supervisor.proc.spawn.spawn`` (a process forked from a
    pre-loaded template is supervised like any other). Raises ``LaunchFailed`` if the child
    cannot start and ``StorageFailed`` if its ledger row cannot be written (the child is then
    killed and reaped). Leaving the block by any route, cancellation included, runs the close
    sequence shielded; it takes at most ``spec.shutdown`` seconds plus the time the kernel takes
    to deliver a SIGKILL.
    """
    child = await _spawn_child(spec, ledger, framer or framer_factory(spec), goodbye,
                               spawner or spawn)
    try:
        async with trio.open_nursery() as nursery:
            child._run_in(nursery)
            handed_over = False
            try:
                await child._record()
                handed_over = True
                yield child
            finally:
                with trio.CancelScope(shield=True):
                    if not handed_over:
                        child._begin_close(None, polite=False, shutdown=0.0)
                    await child.close()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise_lone(group)
    finally:
        child._close_pipes()


async def run_child(
    spec: ProcessSpec,
    ledger: SpawnRecorder | None = None,
    *,
    framer: FramerFactory | None = None,
    goodbye: Goodbye | None = None,
    task_status: trio.TaskStatus[ProcessChild] = trio.TASK_STATUS_IGNORED,
) -> ExitStatus:
    """``open_child`` as a task for ``nursery.start(run_child, spec, ledger)``: started means
    spawned and recorded, and the start value is the ``ProcessChild``.

    Returns the exit status once the child ended and was reaped; cancelling the task closes it.
    """
    async with open_child(spec, ledger=ledger, framer=framer, goodbye=goodbye) as child:
        task_status.started(child)
        return await child.wait()


class ProcessChild:
    """The handle of one running child. Created by ``open_child``; never construct it directly.

    ``pid`` is the leader's pid and ``pgid`` its process group (the same number: the child leads
    its own session). ``key`` is ``spec.key``; ``ledger_key`` is unique per spawn and is what the
    ledger row and the ``CORRAL_CHILD_KEY`` marker carry. ``failure`` holds the framing error
    that stopped the child, if any; ``status`` the exit status once the leader exited.
    """

    def __init__(
        self, spec: ProcessSpec, spawned: Spawned, ledger_key: str, framer: Framer
    ) -> None:
        self.spec = spec
        self.key = spec.key
        self.ledger_key = ledger_key
        self.pid = spawned.pid
        self.pgid = spawned.pid
        self.started_at = time.time()
        self.failure: FrameTooLarge | ProtocolError | None = None
        self.status: ExitStatus | None = None
        self._spawned = spawned
        self._framer = framer
        self._pidfd = open_pidfd(spawned.pid)
        self._ledger: SpawnRecorder | None = None
        self._goodbye: Goodbye | None = None
        self._nursery: trio.Nursery | None = None
        self._exited = trio.Event()
        self._done = trio.Event()
        self._reaped = False
        self._closing = False
        self._send_lock: trio.Lock | None = None  # made with the first send
        # Made with the first stderr line: most children write none, and an empty deque is 760 bytes.
        self._stderr: collections.deque[str] | None = None
        self._stdout_ended = False
        self.on_stderr: Callable[[str], None] | None = None
        """Called with each stderr line as it is kept (masked): a node agent relays them."""

    async def send(self, data: bytes) -> None:
        """Write ``data`` to the child's stdin as is (the caller encodes frames).

        Raises ``ChildExited`` if stdin is closed or the child stopped reading for good. If
        cancelled mid-write, part of ``data`` may have been written: close the child then.
        """
        lock = self._send_lock
        if lock is None:
            lock = self._send_lock = trio.Lock()
        try:
            lock.acquire_nowait()  # the usual case: no schedule point before the write
        except trio.WouldBlock:
            await lock.acquire()
        try:
            await write_all(self._spawned.stdin, data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ChildExited(
                f"child {self.key!r} no longer reads its stdin", data={"pid": self.pid}
            ) from exc
        finally:
            lock.release()

    def send_nowait(self, data: bytes) -> int:
        """Write what the stdin pipe takes of ``data`` now, without a schedule point; how many
        bytes that was (0 when the pipe is full). For a caller outside Trio on Trio's thread (a
        node agent, whose actor loop hosts Trio): it must not call this while a ``send`` of its
        own is under way, and it passes the rest to ``send``. Raises ``ChildExited`` as ``send``."""
        try:
            return write_nowait(self._spawned.stdin.fileno(), data, "pipe")
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ChildExited(
                f"child {self.key!r} no longer reads its stdin", data={"pid": self.pid}
            ) from exc

    async def close_stdin(self) -> None:
        """Close the child's stdin (the usual goodbye); idempotent."""
        await self._spawned.stdin.aclose()

    async def receive_frame(self) -> bytes:
        """The next stdout frame, read from the pipe in the caller's task (one reader at a time).

        A frame already parsed from an earlier read is returned without a schedule point.
        Raises ``trio.EndOfChannel`` once stdout ended cleanly and every frame was received, or
        the framing error (``FrameTooLarge``, ``ProtocolError``) that stops the child, after
        the frames that arrived intact before it. Cancellation loses no frame.
        """
        while True:
            try:
                frame = self._framer.next_frame()
            except (FrameTooLarge, ProtocolError) as exc:
                raise self._broke(exc) from None
            if frame is not None:
                return frame
            if self._stdout_ended:
                if self.failure is not None:
                    raise self._broke(self.failure)
                raise trio.EndOfChannel
            chunk = await receive_chunk(self._spawned.stdout)
            if chunk:
                self._framer.receive_data(chunk)
                continue
            self._stdout_ended = True
            try:
                self._framer.eof()
            except (FrameTooLarge, ProtocolError) as exc:
                self._broke(exc)  # raised once the intact frames before it are taken

    def frames(self) -> AsyncIterator[bytes]:
        """``async for frame in child.frames()``: ``receive_frame`` until stdout ends."""
        return FrameIterator(self.receive_frame)

    def stderr_tail(self) -> list[str]:
        """The last ``spec.stderr_lines`` lines the child wrote to stderr, oldest first."""
        return list(self._stderr or ())

    async def wait(self) -> ExitStatus:
        """Wait until the child ended and its whole close sequence finished; its exit status.

        A child that exits by itself has its leftovers cleaned up first. Cancellation leaves
        the child as it was.
        """
        await self._done.wait()
        return self._final_status()

    def kill_group(self) -> None:
        """SIGKILL the child's process group now (a hung child); the close sequence then
        finishes the rest, descendants that left the group included."""
        # Once the leader is reaped its pid, which is the group id, may name a stranger.
        if not self._reaped:
            signal_group(self.pgid, signal.SIGKILL)

    async def close(self, goodbye: Goodbye | None = None) -> ExitStatus:
        """Run the close sequence (see the module docstring), or join the one already running.

        ``goodbye`` replaces the one given to ``open_child``. Idempotent. Cancelling the caller
        does not stop the sequence (it is shielded and bounded); the block's exit still waits
        for it.
        """
        self._begin_close(goodbye or self._goodbye, polite=True)
        await self._done.wait()
        return self._final_status()

    def _run_in(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        nursery.start_soon(self._watch_exit)
        nursery.start_soon(
            read_stderr_lines,
            self._spawned.stderr,
            self._on_stderr_line,
            self.spec.stderr_line_limit,
        )

    def _begin_close(
        self, goodbye: Goodbye | None, *, polite: bool, shutdown: float | None = None
    ) -> None:
        if self._closing or self._nursery is None:
            return
        self._closing = True
        grace = self.spec.shutdown if shutdown is None else shutdown
        self._nursery.start_soon(self._close_sequence, goodbye, polite, grace)

    async def _watch_exit(self) -> None:
        with trio.CancelScope(shield=True):
            if self._pidfd is not None:
                await trio.lowlevel.wait_readable(self._pidfd)
            else:
                await trio.to_thread.run_sync(block_until_exited, self.pid)
        try:
            self.status = status_of(self.pid, killed=was_signalled(self.pgid))
        except ChildProcessError:  # someone else reaped it: the status is lost, not the close
            logger.warning("child %s (pid %d) was reaped by someone else", self.key, self.pid)
        self._exited.set()
        self._begin_close(None, polite=False)

    def _broke(self, exc: FrameTooLarge | ProtocolError) -> FrameTooLarge | ProtocolError:
        """Note the framing error that stops the child (the first one) and start its close;
        a fresh copy of it for the caller to raise."""
        if self.failure is None:
            self.failure = exc
            logger.warning("child %s (pid %d) broke its framing: %s", self.key, self.pid, exc)
            self._begin_close(None, polite=False)
        failure = self.failure
        return type(failure)(failure.message, data=failure.data)

    def _on_stderr_line(self, line: str) -> None:
        line = redact(line, self.spec.secrets)
        if self._stderr is None:
            self._stderr = collections.deque(maxlen=self.spec.stderr_lines)
        self._stderr.append(line)
        logger.info("[%s %d] %s", self.key, self.pid, line)
        if self.on_stderr is not None:
            self.on_stderr(line)

    async def _close_sequence(self, goodbye: Goodbye | None, polite: bool, shutdown: float) -> None:
        with trio.CancelScope(shield=True):
            try:
                await terminate(self.pid, self.pgid, self.ledger_key, self._exited,
                                functools.partial(self._say_goodbye, goodbye), polite=polite,
                                shutdown=shutdown)
            finally:
                await self._finish()

    async def _say_goodbye(self, goodbye: Goodbye | None) -> None:
        if goodbye is not None:
            try:
                await goodbye(self)
            except Exception:
                logger.debug("goodbye to child %s failed", self.key, exc_info=True)
        await self.close_stdin()

    async def _finish(self) -> None:
        if not self._exited.is_set():
            signal_group(self.pgid, signal.SIGKILL)
            await self._exited.wait()
        if not reaper._reap_owned(self.pid):
            logger.warning("child %s (pid %d) was reaped by someone else", self.key, self.pid)
        self._reaped = True
        forget_signalled([self.pgid])
        if self._spawned.popen is not None:  # Popen must never poll the reaped (reusable) pid
            self._spawned.popen.returncode = returncode(self._final_status())
        if self._pidfd is not None:
            trio.lowlevel.notify_closing(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        await self._spawned.stdin.aclose()
        if self._ledger is not None:
            try:
                await self._ledger.forget(self.ledger_key)
            except Exception:
                logger.exception("cannot drop the ledger row of child %s", self.key)
        self._done.set()

    async def _record(self) -> None:
        """Write the ledger row (none without a ledger); not cancellable (``SpawnRecorder``)."""
        if self._ledger is not None:
            await self._ledger.record(self.ledger_key, kind=self.spec.kind, pid=self.pid,
                                      pgid=self.pgid, argv=self.spec.argv,
                                      started_at=self.started_at)

    def _close_pipes(self) -> None:
        for stream in (self._spawned.stdin, self._spawned.stdout, self._spawned.stderr):
            stream.close()

    def _final_status(self) -> ExitStatus:
        return self.status or ExitStatus(reason="killed")


async def _spawn_child(
    spec: ProcessSpec,
    ledger: SpawnRecorder | None,
    framer: FramerFactory,
    goodbye: Goodbye | None,
    spawner: Spawner,
) -> ProcessChild:
    """Fork ``spec``; nothing after the fork can fail before the caller owns the handle."""
    validate(spec)
    frames = framer()  # before the fork: a bad framer must not leave a child without an owner
    ledger_key = f"{spec.key}#{os.getpid()}.{next(_SEQUENCE)}"
    marker = marker_env(ledger.state_dir if ledger is not None else None, ledger_key)
    death = signal.Signals[spec.death_signal] if spec.death_signal else None
    spawned = await spawner(
        spec.argv, cwd=spec.cwd, env=child_env(spec.env, marker), death_signal=death
    )
    child = ProcessChild(spec, spawned, ledger_key, frames)
    child._goodbye = goodbye
    child._ledger = ledger
    return child
