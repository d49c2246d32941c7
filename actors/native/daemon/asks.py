"""The daemon's side of a native worker's asks (``protocol.native.Ask``): answered beside the
session, not by it.

``served(child, session_id, services)`` wraps a worker's process child for the session: the
session reads ``frames()`` as before, but an ask never reaches it; each ask is answered in a
task of its own (concurrently: a slow MCP call does not hold up a tool listing) by
``services.answer``, and the answer is written to the worker's stdin (one frame each way). The
tasks live in a nursery that ends with the child: when the worker dies or is closed, its asks
in flight are cancelled (an MCP call then sends MCP's cancellation to the server, which goes on
serving every other session). An ask that fails in a way ``answer`` did not foresee is answered
with an error, so the worker is never left waiting; an ask whose worker is gone is dropped.
Asks and their answers bypass the session, so they are not in its frame log
(``options.log_path``) either.

``Services`` is what answers: ``actors.native.daemon.services.DaemonServices`` in the daemon (MCP
registry and language servers), ``NO_SERVICES`` where there are none.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import msgspec
import trio

from protocol.errors import CorralError
from protocol.framing import LengthPrefixFramer
from protocol.native import (
    Answer,
    Ask,
    AskDiagnostics,
    CallMcpTool,
    DiagnosticsReport,
    ListMcpTools,
    McpResult,
    McpTools,
    decode_worker_frame,
    encode_command,
    is_ask,
)
from supervisor.proc.child import Goodbye
from supervisor.proc.spec import ExitStatus

__all__ = ["NO_SERVICES", "ServedChild", "Services", "failed", "served"]

log = logging.getLogger("corral.native.asks")


class Services(Protocol):
    """Answers the asks of the workers of every native session."""

    async def answer(self, session_id: str, ask: Ask) -> Answer:
        """The answer to ``ask`` from a worker of ``session_id``; a failure of what it asks
        about (a crashed server) is an error answer, not a raise. Cancellation abandons it."""
        ...


class _NoServices:
    """Answers every ask with "nothing here" (a driver built without the daemon's services)."""

    async def answer(self, session_id: str, ask: Ask) -> Answer:
        return failed(ask, "mcp.unavailable", "this daemon runs no MCP servers for native sessions")


NO_SERVICES: Services = _NoServices()


def failed(ask: Ask, code: str, message: str) -> Answer:
    """The error answer to ``ask``: no tools, an error result naming ``code``, or no report."""
    match ask:
        case ListMcpTools(id=ask_id):
            return McpTools(id=ask_id)
        case CallMcpTool(id=ask_id):
            return McpResult(id=ask_id, text=f"[{code}] {message}", is_error=True, error_code=code)
        case AskDiagnostics(id=ask_id, path=path):
            return DiagnosticsReport(id=ask_id, path=path)
    raise AssertionError(f"not an ask: {ask!r}")  # unreachable: Ask is exactly these three


class _Child(Protocol):
    """What the wrapper needs of the worker's child (``supervisor.proc.ProcessChild`` is one)."""

    @property
    def pid(self) -> int: ...

    async def send(self, data: bytes) -> None: ...

    def frames(self) -> AsyncIterator[bytes]: ...

    async def close(self, goodbye: Goodbye | None = None) -> ExitStatus: ...


@asynccontextmanager
async def served(child: _Child, session_id: str, services: Services) -> AsyncIterator[ServedChild]:
    """``child`` with its asks answered (see the module docstring) until the block ends."""
    async with trio.open_nursery() as nursery:
        try:
            yield ServedChild(child, session_id, services, nursery)
        finally:
            nursery.cancel_scope.cancel()


class ServedChild:
    """A worker's child as the session sees it: the same, minus the asks."""

    def __init__(self, child: _Child, session_id: str, services: Services,
                 nursery: trio.Nursery) -> None:
        self._child = child
        self._session_id = session_id
        self._services = services
        self._nursery = nursery
        self._framer = LengthPrefixFramer()
        self.answered = 0

    @property
    def pid(self) -> int:
        return self._child.pid

    @property
    def placement(self) -> Any:
        """The child's placement on a cluster node (``None``: it runs here)."""
        return getattr(self._child, "placement", None)

    async def send(self, data: bytes) -> None:
        await self._child.send(data)

    def frames(self) -> AsyncIterator[bytes]:
        return _Frames(self._child.frames(), self)

    async def close(self, goodbye: Goodbye | None = None) -> ExitStatus:
        return await self._child.close(goodbye)

    def take(self, frame: bytes) -> None:
        """Start answering the ask in ``frame``; an unreadable ask is logged and dropped."""
        try:
            ask = decode_worker_frame(frame)
        except msgspec.DecodeError as exc:
            log.warning("session %s: an unreadable ask from its worker: %s", self._session_id, exc)
            return
        if isinstance(ask, ListMcpTools | CallMcpTool | AskDiagnostics):
            self._nursery.start_soon(self._answer, ask)

    async def _answer(self, ask: Ask) -> None:
        try:
            answer = await self._services.answer(self._session_id, ask)
        except CorralError as exc:
            answer = failed(ask, str(exc.code), exc.message)
        except Exception as exc:  # a bug of ours: the worker still gets its answer
            log.exception("session %s: answering %s failed", self._session_id, type(ask).__name__)
            answer = failed(ask, "internal", f"{type(exc).__name__}: {exc}")
        try:
            await self._child.send(self._framer.encode(encode_command(answer)))
        except (CorralError, trio.BrokenResourceError, trio.ClosedResourceError):
            return  # the worker is gone; its exit is on its way to the session
        self.answered += 1


class _Frames:
    """The child's frames with the asks taken out."""

    def __init__(self, inner: AsyncIterator[bytes], owner: ServedChild) -> None:
        self._inner = inner
        self._owner = owner

    def __aiter__(self) -> _Frames:
        return self

    async def __anext__(self) -> bytes:
        while True:
            frame = await self._inner.__anext__()
            if not is_ask(frame):
                return frame
            self._owner.take(frame)
