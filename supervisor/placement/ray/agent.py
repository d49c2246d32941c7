"""The node agent: one detached Ray async actor per node, owning that node's session children.

Theory of operation. Ray runs the actor's methods on an asyncio loop; corral's process layer
(``supervisor.proc``: a new session per child, the ledger key marker, the parent-death signal,
the bounded close sequence that also finds descendants that left the group) is Trio. So the
agent runs Trio as a *guest* on that loop (``trio.lowlevel.start_guest_run``): both run on the
one loop thread, so the buffers below are shared without locks; asyncio calls into Trio through
the Trio token (``_in_trio``), and Trio wakes an asyncio waiter by resolving its future.

Per child (named by ``(session_id, epoch)``) a Trio task runs ``open_child`` with ``raw``
framing: stdout is read in chunks as they come and appended to the child's buffer, which the
gateway drains with ``stream`` — an async generator that yields what is buffered as one
``bytes`` batch of up to ``BATCH_LIMIT`` (one Ray yield per batch, not per frame: the agent never
parses frames), and
finally the exit as a tuple ``(reason, exit_code, signal)``. A buffer past ``BUFFER_LIMIT``
stops the reader (and so the child) until the stream takes it.

Containment does not rely on Ray: the agent is a child subreaper, each child gets SIGKILL as its
parent-death signal and carries ``CORRAL_NODE_ID`` and ``CORRAL_RAY_NAMESPACE``; an agent that
starts sweeps every process of its node still carrying its marker (the leftovers of a SIGKILLed
agent, ``setsid`` grandchildren included). Fencing: the gateway calls ``heartbeat`` every second or so; when none
came for ``heartbeat_timeout`` seconds, the agent kills all its children (and marked strays) and
exits, so a node Ray declared dead does not keep a second harness of a session running.

The actor is created by the gateway with ``max_restarts=0, max_task_retries=0``: corral's
supervisor, not Ray, restarts a session's child (a new epoch, a new placement). This module is
imported only in Ray processes (the gateway and the agent), never by the daemon.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import trio

from protocol.errors import CorralError
from supervisor.proc import reaper
from supervisor.proc.child import ProcessChild, open_child
from supervisor.proc.identity import boot_id, start_token
from supervisor.proc.prctl import set_child_subreaper
from supervisor.proc.spec import ExitStatus, ProcessSpec
from supervisor.placement.ray.nodehost import missing_here, raylet_priority, sweep

__all__ = ["BATCH_LIMIT", "BUFFER_LIMIT", "NAMESPACE_ENV", "NODE_ENV", "NodeAgent"]

NODE_ENV = "CORRAL_NODE_ID"
"""The marker every child of an agent carries: the Ray node id of the agent that spawned it."""

NAMESPACE_ENV = "CORRAL_RAY_NAMESPACE"
"""The other half of the marker: the agent's Ray namespace, one per daemon state directory (so
the agents of two daemons on one node never sweep each other's children)."""

BUFFER_LIMIT = 8 * 1024 * 1024
"""Bytes of one child's output an agent holds for the stream before it stops reading the child."""

BATCH_LIMIT = 1024 * 1024
"""Bytes of output one stream yield carries at most (chunks are smaller): the daemon may hold
one batch beyond its flow-control window (``wire.OUTPUT_WINDOW``), so a batch stays small."""

_CHUNK = 256 * 1024
"""The largest chunk read from a child's stdout in one go (``raw`` framing's frame limit)."""
_STDERR_BACKLOG = 1000
"""Stderr lines a child keeps waiting for its stream; more are dropped (its ring keeps the last)."""

log = logging.getLogger("corral.placement.agent")

_T = TypeVar("_T")


class _Child:
    """One child of the agent as both loops see it: output buffer, waiter, exit."""

    def __init__(self, session_id: str, epoch: int) -> None:
        self.session_id = session_id
        self.epoch = epoch
        self.handle: ProcessChild | None = None
        self.chunks: list[bytes] = []
        self.size = 0
        self.errors: list[str] = []
        self.status: ExitStatus | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.room: trio.Event | None = None
        self.pid = 0
        self.backlog: collections.deque[bytes] = collections.deque()
        """Stdin the pipe had no room for, oldest first (``_write_backlog`` writes it)."""

    def push(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        self._wake()

    def push_stderr(self, line: str) -> None:
        if len(self.errors) < _STDERR_BACKLOG:  # a reader that lags loses lines, never memory
            self.errors.append(line)
        self._wake()

    def end(self, status: ExitStatus) -> None:
        self.status = status
        self._wake()

    def take(self) -> bytes:
        """The oldest buffered chunks, up to ``BATCH_LIMIT`` bytes (at least one chunk)."""
        count, size = 0, 0
        for chunk in self.chunks:
            if count and size + len(chunk) > BATCH_LIMIT:
                break
            count += 1
            size += len(chunk)
        data = b"".join(self.chunks[:count])
        del self.chunks[:count]
        self.size -= size
        return data

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


class NodeAgent:
    """The actor body (the gateway wraps it with ``ray.remote``). See the module docstring."""

    def __init__(self, heartbeat_timeout: float, owner: str, node_ip: str) -> None:
        import ray  # only ever in a Ray worker

        context = ray.get_runtime_context()
        self.node_id: str = context.get_node_id()
        self.marker = {NODE_ENV: self.node_id, NAMESPACE_ENV: context.namespace}
        self.node_ip = node_ip  # the node's address as the cluster lists it
        self.owner = owner
        self.heartbeat_timeout = heartbeat_timeout
        self._last_beat = time.monotonic()
        self._children: dict[tuple[str, int], _Child] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._nursery: trio.Nursery | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._ready: asyncio.Future[None] | None = None
        set_child_subreaper()
        raylet_priority()
        # Trio's I/O waits run in a thread of their own in guest mode, and Ray has threads of
        # its own: a shorter GIL switch interval hands a child's output over sooner.
        sys.setswitchinterval(0.0005)
        self.swept = sweep(self.marker, os.getpid())

    # --- the actor's methods (asyncio) ----------------------------------------------------

    async def info(self) -> dict[str, Any]:
        """Who this agent is: node id and IP, pid, boot id, owner, and its children."""
        await self._started()
        return {"node_id": self.node_id, "node_ip": self.node_ip, "pid": os.getpid(),
                "boot_id": boot_id(), "owner": self.owner, "swept": self.swept,
                "children": self.children()}

    def children(self) -> list[tuple[str, int, int]]:
        """``(session_id, epoch, pid)`` of every child still running."""
        return [(c.session_id, c.epoch, c.pid) for c in self._children.values() if c.status is None]

    async def heartbeat(self, owner: str) -> bool:
        """The gateway's heartbeat; a new ``owner`` (a restarted daemon's gateway) takes over."""
        self._last_beat = time.monotonic()
        self.owner = owner
        return True

    async def spawn(self, session_id: str, epoch: int, argv: list[str], env: dict[str, str | None],
                    cwd: str | None, shutdown: float, kind: str,
                    secrets: list[str] | None = None, needs: list[str] | None = None) -> dict[str, Any]:
        """Start a child; its identity on the node (``{"pid", "create_time", "start_ticks",
        "boot_id"}``) or why it did not start (``{"code", "message"}``:
        ``placement.cwd_missing``, ``placement.binary_missing`` (``argv[0]`` or a program of
        ``needs``), ``launch_failed``)."""
        await self._started()
        missing = missing_here([argv[0], *(needs or ())], env, cwd)
        if missing is not None:
            code, what = missing
            return {"code": code, "message": f"{what} on node {self.node_id} ({self.node_ip})"}
        key = (session_id, epoch)
        if key in self._children:
            return {"code": "launch_failed", "message": f"epoch {epoch} of {session_id} runs already"}
        child = _Child(session_id, epoch)
        spec = ProcessSpec(key=f"ray:{session_id}:{epoch}", kind=kind, argv=argv, cwd=cwd,
                           env={**env, **self.marker}, shutdown=shutdown,
                           secrets=frozenset(secrets or ()),
                           framing="raw", frame_limit=_CHUNK, death_signal="SIGKILL")
        self._children[key] = child
        try:
            pid = await self._in_trio(self._spawn_in_trio, child, spec)
        except CorralError as exc:
            del self._children[key]
            return {"code": str(exc.code), "message": exc.message}
        token = start_token(pid)
        return {"pid": pid, "create_time": token.create_time, "start_ticks": token.start_ticks,
                "boot_id": token.boot_id}

    async def stream(self, session_id: str, epoch: int) -> AsyncIterator[Any]:
        """The child's output as ``bytes`` batches and its stderr as ``list[str]`` batches (masked),
        then its exit ``(reason, code, signal)``."""
        child = self._children.get((session_id, epoch))
        if child is None:
            yield ("lost", None, None)
            return
        loop = asyncio.get_running_loop()
        while True:
            if child.errors:
                lines, child.errors = child.errors, []
                yield lines
                continue
            if child.chunks:
                data = child.take()
                if child.room is not None:
                    self._call_soon(child.room.set)
                yield data
                continue
            if child.status is not None:
                self._children.pop((session_id, epoch), None)
                yield (child.status.reason, child.status.exit_code, child.status.signal)
                return
            child.waiter = loop.create_future()
            await child.waiter
            child.waiter = None

    async def send(self, session_id: str, epoch: int, data: bytes) -> bool:
        """Write ``data`` to the child's stdin; False if it is gone or no longer reads.

        Written here, at once, when the pipe has room (no hand-off to Trio on the round trip
        of a prompt); what does not fit waits in the child's backlog, written in order by one
        Trio task, and later sends queue behind it."""
        child = self._children.get((session_id, epoch))
        if child is None or child.handle is None:
            return False
        if child.backlog:
            child.backlog.append(data)
            return True
        try:
            data = data[child.handle.send_nowait(data):]
        except CorralError:
            return False
        if data:
            child.backlog.append(data)
            nursery = self._nursery
            assert nursery is not None
            self._call_soon(lambda: nursery.start_soon(_write_backlog, child))
        return True

    async def close(self, session_id: str, epoch: int, brutal: bool) -> bool:
        """Close the child: stdin closed, then SIGTERM and SIGKILL to its group and family within
        its shutdown (``brutal``: SIGKILL now). Returns once it is reaped; False if unknown."""
        child = self._children.get((session_id, epoch))
        if child is None or child.handle is None:
            return False
        handle = child.handle
        if brutal:
            await self._in_trio(_kill, handle)
        else:
            await self._in_trio(handle.close)
        return True

    async def reconcile(self, keep: list[tuple[str, int]]) -> list[tuple[str, int, int]]:
        """Kill every child whose ``(session_id, epoch)`` is not in ``keep``; the killed ones."""
        await self._started()
        wanted = {(s, e) for s, e in keep}
        stale = [c for k, c in self._children.items() if k not in wanted and c.handle is not None]
        for child in stale:
            await self._in_trio(_kill, child.handle)
        return [(c.session_id, c.epoch, c.pid) for c in stale]

    async def stop(self) -> int:
        """Kill every child and leave the process; the number killed (``corral stop``)."""
        count = len(self.children())
        await self._in_trio(self._kill_all)
        asyncio.get_running_loop().call_later(0.05, os._exit, 0)
        return count

    # --- Trio, as a guest on the actor's loop -----------------------------------------------

    async def _started(self) -> None:
        if self._ready is None:
            loop = self._loop = asyncio.get_running_loop()
            self._ready = loop.create_future()
            trio.lowlevel.start_guest_run(self._trio_main, run_sync_soon_threadsafe=loop.call_soon_threadsafe,
                                          done_callback=self._trio_done)
        await asyncio.shield(self._ready)

    async def _trio_main(self) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._token = trio.lowlevel.current_trio_token()
            await nursery.start(reaper.run_orphan_reaper)
            nursery.start_soon(self._watchdog)
            assert self._ready is not None
            self._ready.set_result(None)

    def _trio_done(self, outcome: Any) -> None:
        log.error("the agent's Trio loop ended: %r", outcome)
        os._exit(1)

    def _call_soon(self, fn: Callable[[], object]) -> None:
        assert self._token is not None
        self._token.run_sync_soon(fn)

    async def _in_trio(self, fn: Callable[..., Awaitable[_T]], *args: Any) -> _T:
        """Run ``fn(*args)`` as a Trio task; its result (or exception) here."""
        assert self._loop is not None and self._nursery is not None
        future: asyncio.Future[_T] = self._loop.create_future()
        nursery = self._nursery

        async def run() -> None:
            try:
                result = await fn(*args)
            except Exception as exc:  # noqa: BLE001 (whatever it raised is the caller's answer)
                if not future.done():
                    future.set_exception(exc)
            else:
                if not future.done():
                    future.set_result(result)

        self._call_soon(lambda: nursery.start_soon(run))
        return await future

    async def _spawn_in_trio(self, child: _Child, spec: ProcessSpec) -> int:
        assert self._nursery is not None
        pid: int = await self._nursery.start(self._run_child, child, spec)
        return pid

    async def _run_child(self, child: _Child, spec: ProcessSpec,
                         task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        async with open_child(spec) as handle:
            for line in handle.stderr_tail():  # written before the hook was set
                child.push_stderr(line)
            handle.on_stderr = child.push_stderr
            child.handle = handle
            child.pid = handle.pid
            task_status.started(handle.pid)
            try:
                async for chunk in handle.frames():
                    child.push(chunk)
                    while child.size > BUFFER_LIMIT:
                        child.room = trio.Event()
                        await child.room.wait()
            except CorralError:
                pass
            status = await handle.close()
        child.end(status)

    async def _watchdog(self) -> None:
        """Kill everything and exit once the gateway's heartbeat stopped (the fence)."""
        while True:
            await trio.sleep(min(0.25, self.heartbeat_timeout / 4))
            if time.monotonic() - self._last_beat > self.heartbeat_timeout:
                log.warning("no heartbeat for %.1f s: killing %d children and exiting",
                            self.heartbeat_timeout, len(self.children()))
                await self._kill_all()
                os._exit(0)

    async def _kill_all(self) -> None:
        handles = [c.handle for c in self._children.values() if c.handle is not None]
        async with trio.open_nursery() as nursery:
            for handle in handles:
                nursery.start_soon(_kill, handle)
        await trio.to_thread.run_sync(sweep, self.marker, os.getpid())


async def _write_backlog(child: _Child) -> None:
    """Write the child's stdin backlog in order, until it is empty or the child reads no more."""
    assert child.handle is not None
    while child.backlog:
        try:
            await child.handle.send(child.backlog[0])
        except CorralError:
            child.backlog.clear()
            return
        child.backlog.popleft()


async def _kill(handle: ProcessChild) -> None:
    handle.kill_group()
    await handle.close()
