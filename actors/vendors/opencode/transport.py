"""An OpenCode session's harness child without a process: ``ServerChild`` on a shared server.

It has the shape the session needs of any child (``actors.session.child.HarnessChild``: ``pid``,
``send``, ``frames``, ``close``), so the session runs it like a process:

* ``pid`` is the shared server's pid;
* ``send(line)`` takes a ``wire.Call`` line from the translator and queues it; one worker task
  performs the calls in order (each bounded by ``call_timeout``) and puts each ``wire.Answer``
  among the session's events. An answer that carries an OpenCode session (create, read) routes
  that session's events here first;
* ``frames()`` yields the session's SSE events and the answers, until the server generation ends
  or the session closes; text deltas that queued up behind one another come out joined
  (``wire.coalesce``: a burst of streamed chunks costs the session one event, not dozens);
* ``close(goodbye)`` runs the goodbye calls (abort, reject), waits for the queue to drain
  (bounded), detaches and reports an exit status: ``exited 0`` for a close the session asked
  for, the server's own status (e.g. killed by ``SIGKILL``) when the server died under it.

``open_server_child`` is the driver's ``spawn``: it leases the server for the launch's
fingerprint (starting it if needed), attaches, runs the worker, and releases the lease on the
way out (the last lease stops the server).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import trio

from actors.harness import Launch
from protocol.errors import ChildExited
from supervisor.proc.spec import ExitStatus

from . import wire
from .server import Attachment, OpenCodeServer

if TYPE_CHECKING:  # loaded with the server whose client this is (``actors.vendors.opencode.server``)
    from .http import HttpClient

__all__ = ["Leases", "ServerChild", "open_server_child"]

_CALL = msgspec.json.Decoder(wire.Call)
_BATCH = 256
"""The most frames ``frames`` takes from the queue at once to join their deltas."""


class Leases(Protocol):
    """What ``open_server_child`` needs of the server pool (``servers.OpenCodeServers``)."""

    async def lease(self, launch: Launch) -> OpenCodeServer: ...

    async def release(self, server: OpenCodeServer, *, linger: bool = False) -> None: ...


class ServerChild:
    """A session attached to a shared OpenCode server (see the module docstring)."""

    def __init__(self, attachment: Attachment, *, call_timeout: float = 30.0,
                 close_timeout: float = 10.0) -> None:
        self._attachment = attachment
        self._call_timeout = call_timeout
        self._close_timeout = close_timeout
        self._calls_send, self._calls = trio.open_memory_channel[wire.Call](1000)
        self._idle = trio.Event()
        self._idle.set()
        self._pending = 0
        self._closed = False

    @property
    def pid(self) -> int:
        return self._attachment.pid

    @property
    def client(self) -> HttpClient:
        """The shared server's HTTP client (for the driver's own reads)."""
        return self._attachment.client

    async def send(self, data: bytes) -> None:
        """Queue one call line; ``ChildExited`` once the session closed or the server went."""
        if self._closed:
            raise ChildExited("the opencode session is detached")
        try:
            call = _CALL.decode(data)
        except msgspec.DecodeError as exc:
            raise ValueError(f"not an OpenCode call line: {exc}") from None
        self._pending += 1
        self._idle = trio.Event() if self._idle.is_set() else self._idle
        try:
            self._calls_send.send_nowait(call)
        except (trio.WouldBlock, trio.ClosedResourceError):
            self._done_one()
            raise ChildExited("the opencode session's call queue is closed or full") from None

    async def frames(self) -> AsyncIterator[bytes]:
        """The session's events and answers until the server generation ends or it closes;
        with each frame, those already queued behind it (up to ``_BATCH``), their runs of text
        deltas joined (``wire.coalesce``)."""
        events = self._attachment.events
        async for frame in events:
            batch = [frame]
            while len(batch) < _BATCH:
                try:
                    batch.append(events.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            for joined in wire.coalesce(batch) if len(batch) > 1 else batch:
                yield joined

    async def close(self, goodbye: Callable[[Any], Awaitable[None]] | None = None) -> ExitStatus:
        """Run ``goodbye``, let queued calls finish (bounded), detach; the exit status."""
        if not self._closed:
            with trio.move_on_after(self._close_timeout):
                if goodbye is not None:
                    with contextlib.suppress(ChildExited):
                        await goodbye(self)
                await self._idle.wait()
            self._closed = True
            self._calls_send.close()
        self._attachment.detach()
        ended = self._attachment.ended
        return ended if ended is not None else ExitStatus(reason="exited", exit_code=0)

    @property
    def lost(self) -> bool:
        """True when the server's generation ended under this session (not a close)."""
        return self._attachment.ended is not None

    async def work(self) -> None:
        """Perform queued calls in order until the queue closes (the worker task)."""
        async with self._calls:
            async for call in self._calls:
                try:
                    self._attachment.deliver(await self._perform(call))
                finally:
                    self._done_one()

    async def _perform(self, call: wire.Call) -> bytes:
        from .http import HttpError  # loaded with the server

        body = None if call.body is None else msgspec.json.encode(call.body)
        try:
            with trio.fail_after(self._call_timeout):
                status, data = await self._attachment.client.request(call.method, call.path, body)
        except (HttpError, trio.TooSlowError) as exc:
            message = str(exc) or f"no answer in {self._call_timeout:g} s"
            return wire.encode_answer(wire.Answer(id=call.id, status=0, error=message))
        raw = msgspec.Raw(data if data.strip() else b"null")
        if 200 <= status < 300 and call.method in ("POST", "GET") and \
                call.path.split("?", 1)[0].rstrip("/") in ("/session", f"/session/{_tail(call.path)}"):
            session_id = _session_id(data)
            if session_id is not None:
                self._attachment.route(session_id)
        try:
            msgspec.json.decode(raw)
        except msgspec.DecodeError:
            raw = msgspec.Raw(msgspec.json.encode(data.decode("utf-8", "replace")))
        return wire.encode_answer(wire.Answer(id=call.id, status=status, body=raw))

    def _done_one(self) -> None:
        self._pending -= 1
        if self._pending == 0:
            self._idle.set()


@asynccontextmanager
async def open_server_child(leases: Leases, launch: Launch, *, attach_timeout: float = 90.0,
                            call_timeout: float = 30.0) -> AsyncIterator[ServerChild]:
    """Lease the server for ``launch``, attach a ``ServerChild``; detach and release after."""
    server = await leases.lease(launch)
    child: ServerChild | None = None
    try:
        attachment = await server.attach(attach_timeout)
        child = ServerChild(attachment, call_timeout=call_timeout)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(child.work)
            try:
                yield child
            finally:
                with trio.CancelScope(shield=True):
                    await child.close()
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await leases.release(server, linger=child.lost if child is not None else False)


def _tail(path: str) -> str:
    return path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def _session_id(data: bytes) -> str | None:
    try:
        found = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    value = found.get("id") if isinstance(found, dict) else None
    return value if isinstance(value, str) and value.startswith("ses") else None
