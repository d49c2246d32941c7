"""The trio shell around ``LspCore``: one running server process, read, written and watched.

Three tasks per connection, in the connection's nursery: the **reader** feeds every frame the
server writes to the core and acts on what comes out; the **writer** sends queued frames in
order (the reader never writes itself, so a server blocked on a full stdout pipe cannot
deadlock us); one **watchdog** per request in flight kills the process group when the answer
has not come within the request timeout (a hung server: the actor then restarts it). Callers
(``diagnostics``) never send directly: they queue frames and wait on the core's state, so a
caller that gives up early leaves nothing half-written.
"""

from __future__ import annotations

import logging
import math

import trio

from actors.lsp.core import Answered, Done, LspCore, Output, Published, Ready, Result, Send, WaitUntil
from protocol import jsonrpc
from protocol.errors import ChildExited, FrameTooLarge, ProtocolError
from supervisor.proc.child import ProcessChild

__all__ = ["Connection", "ConnectionLost"]

log = logging.getLogger("corral.lsp")

_OUTBOX = 1024  # frames queued for the writer; a server that lets more pile up is stuck
_PULL_TRIES = 4  # a pull answered "content modified" is asked again, this many times in all
_RETRIED = frozenset({jsonrpc.CONTENT_MODIFIED, jsonrpc.SERVER_CANCELLED, jsonrpc.REQUEST_CANCELLED})


class ConnectionLost(ChildExited):
    """The server process ended (crash, kill, hang) while a caller waited on it."""


class _Call:
    __slots__ = ("answer", "done", "watchdog")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.answer: Answered | None = None
        self.watchdog = trio.CancelScope()


class Connection:
    """One incarnation of a language server: made by the actor inside ``open_child``."""

    def __init__(self, core: LspCore, child: ProcessChild, *, name: str,
                 request_timeout: float, startup_timeout: float) -> None:
        self.core = core
        self.child = child
        self.name = name
        self.request_timeout = request_timeout
        self.startup_timeout = startup_timeout
        self.ready = trio.Event()
        self.closed = trio.Event()
        self.warm = False
        """Whether the server published or answered diagnostics at least once (no longer cold)."""
        self.failure: str | None = None
        self._changed = trio.Event()
        self._calls: dict[jsonrpc.RequestId, _Call] = {}
        self._probe: jsonrpc.RequestId | None = None
        self._out_send, self._out_recv = trio.open_memory_channel[bytes](_OUTBOX)
        self._nursery: trio.Nursery | None = None

    async def run(self) -> str:
        """Handshake, then serve until the server's stdout ends; returns why it ended.

        Cancellation stops the tasks; the caller's ``open_child`` block then closes the process.
        """
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._writer)
                rid, frame = self.core.start()
                self._call(frame, rid, self.startup_timeout)
                reason = await self._reader()
                nursery.cancel_scope.cancel()
            return self.failure or reason
        finally:
            self.closed.set()
            self._pulse()
            for call in self._calls.values():
                call.done.set()

    async def diagnostics(self, path: str, language_id: str, text: str, *,
                          deadline: float, settle: float) -> Result | None:
        """Open or change ``path`` to ``text`` and wait until ``deadline`` for its diagnostics.

        None if they did not come in time (a liveness probe is then sent: a server that does
        not answer it is hung and gets killed). ``ConnectionLost`` if the server ended first.
        Never returns a result for an older version of the text.
        """
        now = trio.current_time()
        version, frames = self.core.sync(path, language_id, text, now)
        for frame in frames:
            self._queue(frame)
        if self.core.pull:
            result = await self._pulled(path, version, deadline)
        else:
            result = await self._pushed(path, version, deadline, settle)
        if result is None and not self.closed.is_set():
            self._send_probe()
        return result

    def kill(self, why: str) -> None:
        """Kill the server's process group now; the reader then sees its stdout end."""
        if self.failure is None:
            self.failure = why
            log.warning("language server %s: %s; killing it", self.name, why)
        self.child.kill_group()

    # --- waiting ---------------------------------------------------------------------------

    async def _pushed(self, path: str, version: int, deadline: float, settle: float) -> Result | None:
        sent_at = self.core.sent_at(path)
        while True:
            self._check_open()
            verdict = self.core.verdict(path, version, sent_at, trio.current_time(), settle)
            if isinstance(verdict, Done):
                return verdict.result
            wake = min(verdict.when, deadline) if isinstance(verdict, WaitUntil) else deadline
            if trio.current_time() >= deadline:
                return None
            changed = self._changed
            with trio.move_on_at(wake):
                await changed.wait()

    async def _pulled(self, path: str, version: int, deadline: float) -> Result | None:
        for _ in range(_PULL_TRIES):
            self._check_open()
            verdict = self.core.verdict(path, version, -math.inf, trio.current_time(), 0.0)
            if isinstance(verdict, Done):
                return verdict.result
            if trio.current_time() >= deadline or self.core.version(path) is None:
                return None
            rid, frame = self.core.pull_request(path)
            call = self._call(frame, rid, self.request_timeout)
            with trio.move_on_at(deadline):
                await call.done.wait()
            answer = call.answer
            if answer is None:
                self._check_open()
                return None
            if answer.error is not None and answer.error.code not in _RETRIED:
                log.info("language server %s refused a pull: %s", self.name, answer.error.message)
                return None
        return None

    def _check_open(self) -> None:
        if self.closed.is_set():
            raise ConnectionLost(f"language server {self.name} ended: {self.failure or 'exited'}")

    # --- requests and their watchdogs ------------------------------------------------------

    def _call(self, frame: bytes, rid: jsonrpc.RequestId, timeout: float) -> _Call:
        call = self._calls[rid] = _Call()
        self._queue(frame)
        if self._nursery is not None:
            self._nursery.start_soon(self._watch, rid, call, trio.current_time() + timeout)
        return call

    async def _watch(self, rid: jsonrpc.RequestId, call: _Call, deadline: float) -> None:
        with call.watchdog:
            await trio.sleep_until(deadline)
            if not call.done.is_set():
                self.kill(f"hung: request {rid} got no answer in time")

    def _send_probe(self) -> None:
        if self._probe is not None and self._probe in self._calls:
            return
        rid, frame = self.core.ping()
        self._probe = rid
        self._call(frame, rid, self.request_timeout)

    # --- the tasks -------------------------------------------------------------------------

    def _queue(self, frame: bytes) -> None:
        try:
            self._out_send.send_nowait(frame)
        except trio.WouldBlock:
            self.kill(f"not reading its stdin ({_OUTBOX} frames waiting)")
        except trio.ClosedResourceError:
            pass  # the writer is gone: the connection is ending

    async def _writer(self) -> None:
        async with self._out_recv:
            async for frame in self._out_recv:
                try:
                    await self.child.send(frame)
                except ChildExited:
                    return  # the reader sees the end of stdout

    async def _reader(self) -> str:
        try:
            async for payload in self.child.frames():
                try:
                    outputs = self.core.receive(payload, trio.current_time())
                except ProtocolError as exc:
                    self.kill(f"protocol error: {exc.message}")
                    continue
                for out in outputs:
                    self._act(out)
        except (ProtocolError, FrameTooLarge) as exc:
            return f"framing error: {exc.message}"
        return "exited"

    def _act(self, out: Output) -> None:
        match out:
            case Send(data=data):
                self._queue(data)
            case Ready():
                self.ready.set()
                self._pulse()
            case Answered(id=rid):
                call = self._calls.pop(rid, None)
                if call is not None:
                    call.answer = out
                    call.watchdog.cancel()
                    call.done.set()
            case Published():
                self.warm = True
                self._pulse()

    def _pulse(self) -> None:
        self._changed.set()
        self._changed = trio.Event()
