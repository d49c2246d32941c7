"""``Client``: one handshaken websocket connection to the daemon, with typed requests and events.

One reader task (started by ``connect._open``) feeds every frame to the
``subscription.Router``: ``ok``/``error`` to the request waiting on its id, ``event``/``lagged``
to the subscription of that session. A subscription cut by ``lagged`` or by its full local
buffer resubscribes by itself from the seq after the last one it yielded. When the connection
drops, every waiting request and subscription fails with ``ConnectionLost``; a request on a
dead connection fails at once, and every request has a timeout: nothing hangs.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, TypeVar

import msgspec
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from protocol.base import PROTOCOL_VERSION, Data
from protocol.codec import decode_server_frame, encode
from protocol.errors import (
    BadRequest,
    CorralError,
    ProtocolError,
    Timeout,
    error_from_wire,
)
from protocol.events import Decision, Delivery
from protocol.messages import (
    RESULT_TYPES,
    DaemonShutdown,
    DaemonStatus,
    DaemonStatusResult,
    Empty,
    ErrorFrame,
    EventFrame,
    HarnessList,
    HarnessListResult,
    Hello,
    McpList,
    McpListResult,
    McpRestart,
    McpServerResult,
    Ok,
    PlacementStatus,
    PlacementStatusRequest,
    PromptResult,
    Request,
    SessionClose,
    SessionCompact,
    SessionCreate,
    SessionGet,
    SessionInterrupt,
    SessionList,
    SessionListResult,
    SessionPermission,
    SessionPrompt,
    SessionResult,
    SessionResume,
    SessionSetModel,
    SessionSetPermissions,
    SessionSubscribe,
    SessionUnsubscribe,
    SubscribeResult,
    Welcome,
)
from protocol.models import (
    ClientInfo, Detection, McpServer, McpServerInfo, PermissionMode, Permissions, SessionInfo,
    WorkspaceSpec,
)

from supervisor import __version__
from supervisor.client.subscription import ConnectionLost, RawEventFrame, Router, Subscription

__all__ = ["SUBSCRIPTION_BUFFER", "Client"]

log = logging.getLogger("corral.client")

SUBSCRIPTION_BUFFER = 1024
CLOSE_TIMEOUT = 2.0
"""Seconds a graceful close waits for the daemon's half of the close handshake."""

_R = TypeVar("_R", bound=Data)


class Client:
    """One handshaken connection to the daemon. Made by ``open_client``; every method is cancellable."""

    def __init__(self, ws: WebSocketConnection, stream: trio.abc.Stream, nursery: trio.Nursery, *,
                 request_timeout: float, subscription_buffer: int = SUBSCRIPTION_BUFFER) -> None:
        self.ws = ws
        self._stream = stream
        self.request_timeout = request_timeout
        self.subscription_buffer = subscription_buffer
        self.connection_id = ""
        self.daemon_pid = 0
        self.daemon_version = ""
        self.resubscriptions = 0
        """How many times a subscription was renewed after ``lagged`` or a full buffer."""
        self._nursery = nursery
        self._ids = itertools.count(1)
        self._unsubscribing: dict[str, trio.Event] = {}
        """Sessions whose unsubscribe is on its way: a new subscription to one waits for it,
        or the late unsubscribe would end the new subscription on the daemon."""
        self._router = Router()

    # --- requests ---------------------------------------------------------------------------

    async def request(self, message: Request) -> Data:
        """Send any request (its ``id`` is replaced by a fresh one) and return its decoded result."""
        return await self._call(message, RESULT_TYPES[_method(message)])

    async def status(self) -> DaemonStatusResult:
        return await self._call(DaemonStatus(id=0), DaemonStatusResult)

    async def shutdown(self) -> None:
        """Ask the daemon to stop gracefully.

        The connection closing before the answer arrives counts as success: the daemon closes
        its listeners as soon as it starts stopping, and may drop the answer with them.
        """
        try:
            await self._call(DaemonShutdown(id=0), Empty)
        except ConnectionLost:
            log.debug("the connection closed before the answer to daemon.shutdown")

    async def harnesses(self, *, models: bool = False) -> list[Detection]:
        """``harness.list``; ``models`` waits for the slow models probes too."""
        return (await self._call(HarnessList(id=0, models=models), HarnessListResult)).harnesses

    async def create(self, harness: str, cwd: str, *, name: str | None = None,
                     model: str | None = None, prompt: str | None = None,
                     permissions: Permissions | None = None, env: dict[str, str] | None = None,
                     mcp_servers: list[McpServer] | None = None,
                     options: dict[str, Any] | None = None,
                     workspace: WorkspaceSpec | None = None) -> SessionInfo:
        """Start a session; answered once it exists (its first child may still be starting)."""
        message = SessionCreate(id=0, harness=harness, cwd=cwd, name=name, model=model,
                                prompt=prompt, permissions=permissions, env=env,
                                mcp_servers=mcp_servers, options=options, workspace=workspace)
        return (await self._call(message, SessionResult)).session

    async def resume(self, session_id: str, *, env: dict[str, str] | None = None) -> SessionInfo:
        """Reopen a closed or failed session whose harness can resume (same id, log continues)."""
        return (await self._call(SessionResume(id=0, session_id=session_id, env=env), SessionResult)).session

    async def sessions(self) -> list[SessionInfo]:
        return (await self._call(SessionList(id=0), SessionListResult)).sessions

    async def get(self, session_id: str) -> SessionInfo:
        return (await self._call(SessionGet(id=0, session_id=session_id), SessionResult)).session

    async def prompt(self, session_id: str, text: str) -> Delivery:
        """Send a prompt; the answer says whether it was prompted, steered or held."""
        message = SessionPrompt(id=0, session_id=session_id, text=text)
        return (await self._call(message, PromptResult)).delivery

    async def interrupt(self, session_id: str) -> None:
        await self._call(SessionInterrupt(id=0, session_id=session_id), Empty)

    async def permission(self, session_id: str, permission_id: str, decision: Decision) -> None:
        """Answer an open permission; ``AlreadyDecided`` if another answer won first."""
        await self._call(SessionPermission(id=0, session_id=session_id,
                                           permission_id=permission_id, decision=decision), Empty)

    async def set_model(self, session_id: str, model: str) -> None:
        await self._call(SessionSetModel(id=0, session_id=session_id, model=model), Empty)

    async def set_permissions(self, session_id: str, mode: PermissionMode) -> None:
        """``session.set_permissions``: the session's permission mode from now on."""
        await self._call(SessionSetPermissions(id=0, session_id=session_id, mode=mode), Empty)

    async def compact(self, session_id: str) -> None:
        """``session.compact``: compact an idle native session now (a ``compaction`` event
        follows in its log)."""
        await self._call(SessionCompact(id=0, session_id=session_id), Empty)

    async def close(self, session_id: str) -> None:
        """Close a session; answered once its close sequence has ended."""
        await self._call(SessionClose(id=0, session_id=session_id), Empty)

    async def mcp_servers(self) -> list[McpServerInfo]:
        """``mcp.list``: every supervised MCP server with its state, pid and tools."""
        return (await self._call(McpList(id=0), McpListResult)).servers

    async def mcp_restart(self, name: str) -> McpServerInfo:
        """``mcp.restart``: start server ``name`` afresh (a failed one too); its state after."""
        return (await self._call(McpRestart(id=0, name=name), McpServerResult)).server

    async def placement(self) -> PlacementStatus:
        """``placement.status``: the placement backend and its nodes with their load."""
        return await self._call(PlacementStatusRequest(id=0), PlacementStatus)

    # --- events -----------------------------------------------------------------------------

    async def events(self, session_id: str, from_seq: int = 0, *,
                     follow: bool = True) -> AsyncGenerator[EventFrame, None]:
        """The session's events from ``from_seq`` (0 = everything), in seq order, each once.

        After ``lagged`` (or a full local buffer) it resubscribes from the seq after the last
        one it yielded. With ``follow=False`` it ends after the newest event that existed when
        it subscribed. Raises ``ConnectionLost`` if the connection drops. Close it with
        ``contextlib.aclosing`` so that the daemon is told to unsubscribe at once.
        """
        async with aclosing(self.raw_events(session_id, from_seq, follow=follow)) as items:
            async for item in items:
                if item.frame is not None:
                    yield item.frame

    async def raw_events(self, session_id: str, from_seq: int = 0, *,
                         follow: bool = True) -> AsyncGenerator[RawEventFrame, None]:
        """Like ``events``, with each frame's text as received (event kinds unknown here included)."""
        subscriptions = self._router.subscriptions
        if session_id in subscriptions:
            raise BadRequest(f"already subscribed to {session_id} on this connection")
        unsubscribing = self._unsubscribing.get(session_id)
        if unsubscribing is not None:  # an earlier follower's unsubscribe goes first
            await unsubscribing.wait()
            if session_id in subscriptions:
                raise BadRequest(f"already subscribed to {session_id} on this connection")
        next_seq = max(from_seq, 1)
        target: int | None = None
        sub: Subscription | None = None
        try:
            while True:
                sub = subscriptions[session_id] = Subscription(session_id, self.subscription_buffer)
                message = SessionSubscribe(id=0, session_id=session_id, from_seq=next_seq)
                result = await self._call(message, SubscribeResult, subscription=sub)
                target = result.last_seq if target is None else target
                if not follow and next_seq > target:
                    return
                async with sub.receive:
                    async for item in sub.receive:
                        if item.seq < next_seq:
                            continue
                        next_seq = item.seq + 1
                        yield item
                        if not follow and next_seq > target:
                            return
                if sub.error is not None:
                    raise sub.error
                self.resubscriptions += 1
                log.debug("resubscribing to %s from %d", session_id, next_seq)
        finally:
            if sub is not None and subscriptions.get(session_id) is sub:
                del subscriptions[session_id]
                if sub.confirmed:
                    self._unsubscribe_soon(session_id)

    # --- lifetime ---------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._router.lost is None

    async def aclose(self) -> None:
        """Close the websocket (shielded); what still waits fails with ``ConnectionLost``.

        Called with the caller's scope cancelled (Ctrl-C on ``corral attach``), it closes the
        stream at once: the close handshake needs trio-websocket's reader task, which runs in
        the same cancelled scope and can no longer receive the daemon's answer, so waiting for
        it would only wait out its bound. Otherwise it closes with the handshake (bounded).
        """
        self._router.lose(ConnectionLost("the client closed the connection"))
        cancelled = trio.current_effective_deadline() == -math.inf
        with trio.CancelScope(shield=True):
            if not cancelled:
                with trio.move_on_after(CLOSE_TIMEOUT):
                    await self.ws.aclose()
            # trio-websocket leaves the stream open when the daemon closed first.
            await self._stream.aclose()

    # --- internals --------------------------------------------------------------------------

    async def _call(self, message: Request, result_type: type[_R], *,
                    subscription: Subscription | None = None) -> _R:
        if self._router.lost is not None:
            raise ConnectionLost(self._router.lost.message)
        request_id = next(self._ids)
        message = msgspec.structs.replace(message, id=request_id)
        method = _method(message)
        pending = self._router.expect(request_id, subscription)
        try:
            try:
                await self.ws.send_message(encode(message).decode())
            except ConnectionClosed:
                self._router.lose(ConnectionLost("the connection to the daemon closed"))
            with trio.move_on_after(self.request_timeout):
                await pending.done.wait()
        finally:
            self._router.forget(request_id)
        match pending.answer:
            case None:
                raise Timeout(f"no answer to {method} within {self.request_timeout:g} s")
            case Ok(result=result):
                return msgspec.convert(result, result_type)
            case ErrorFrame(code=code, message=text, data=data):
                raise error_from_wire(code, text, data)
            case CorralError() as error:
                raise error

    async def _handshake(self, token: str, name: str) -> None:
        hello = Hello(protocol=PROTOCOL_VERSION, token=token,
                      client=ClientInfo(name=name, version=__version__))
        try:
            await self.ws.send_message(encode(hello).decode())
            frame = decode_server_frame(await self.ws.get_message())
        except ConnectionClosed as exc:
            raise ConnectionLost(f"the daemon closed the connection during the handshake{_why(exc)}") from None
        except msgspec.DecodeError as exc:
            raise ProtocolError(f"the daemon answered hello with garbage: {exc}") from None
        match frame:
            case Welcome(connection_id=connection_id, daemon=daemon):
                self.connection_id = connection_id
                self.daemon_pid = daemon.pid
                self.daemon_version = daemon.version
            case ErrorFrame(code=code, message=text, data=data):
                raise error_from_wire(code, text, data)
            case _:
                raise ProtocolError(f"the daemon answered hello with {type(frame).__name__}")

    async def _reader(self) -> None:
        """Route every frame until the connection drops; then fail everything that waits."""
        try:
            while True:
                text = await self.ws.get_message()
                self._router.route(text if isinstance(text, str) else text.decode())
        except ConnectionClosed as exc:
            self._router.lose(ConnectionLost(f"the connection to the daemon closed{_why(exc)}"))

    def _unsubscribe_soon(self, session_id: str) -> None:
        if self._router.lost is not None:
            return
        done = self._unsubscribing[session_id] = trio.Event()
        try:
            self._nursery.start_soon(self._unsubscribe, session_id, done)
        except RuntimeError:
            self._unsubscribing.pop(session_id, None)
            done.set()  # the client is closing: the daemon drops the subscription with the connection

    async def _unsubscribe(self, session_id: str, done: trio.Event) -> None:
        try:
            await self._call(SessionUnsubscribe(id=0, session_id=session_id), Empty)
        except CorralError as exc:
            log.debug("unsubscribe from %s: %s", session_id, exc)
        finally:
            if self._unsubscribing.get(session_id) is done:
                del self._unsubscribing[session_id]
            done.set()


def _method(message: Request) -> str:
    tag = type(message).__struct_config__.tag
    if not isinstance(tag, str):
        raise BadRequest(f"{type(message).__name__} is not a request")
    return tag


def _why(closed: ConnectionClosed) -> str:
    """`` (code 1008: unauthorized)`` for a close frame that says something; else nothing."""
    reason = closed.reason
    if reason is None or reason.code in (1000, 1005, 1006):
        return ""
    return f" (code {reason.code}{': ' + reason.reason if reason.reason else ''})"
