"""The editor's end of ``corral acp``: newline-delimited JSON-RPC on stdin and stdout.

``EditorLink.read`` is the one reader task (``protocol.framing.NdjsonFramer`` +
``protocol.jsonrpc.Endpoint``): a request goes to the agent's ``arrived`` at once, in the
reader's order (the agent runs each in a task of its own: ``session/prompt`` lasts a whole turn);
``session/cancel`` runs ``cancel`` in a task; a response settles the ``call`` (a
``session/request_permission``) that waits on its id. Every write to stdout goes through one lock,
one whole line at a time; nothing else ever writes there. The link is the ``Editor`` the
sessions' followers (``supervisor.acp.follow``) notify and ask.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio

from protocol.errors import ProtocolError
from protocol.framing import NdjsonFramer
from protocol.jsonrpc import (
    PARSE_ERROR, Endpoint, ErrorResponse, Notification, Request, RequestId, Response, decode_as,
)

from . import schema as s
from .follow import Waiter

__all__ = ["FRAME_LIMIT", "EditorLink"]

log = logging.getLogger("corral.acp")

FRAME_LIMIT = 64 * 1024 * 1024


class EditorLink:
    """JSON-RPC with the editor on stdio (see the module docstring)."""

    def __init__(self, stdout: trio.abc.SendStream, nursery: trio.Nursery, *,
                 arrived: Callable[[Request], None], cancel: Callable[[str], Awaitable[None]]) -> None:
        self._stdout = stdout
        self._nursery = nursery
        self._arrived = arrived
        self._cancel = cancel
        self._endpoint = Endpoint()
        self._send_lock = trio.Lock()
        self._calls: dict[RequestId, Waiter] = {}

    async def read(self, stdin: trio.abc.ReceiveStream) -> None:
        framer = NdjsonFramer(FRAME_LIMIT)
        while data := await stdin.receive_some(65536):
            try:
                framer.receive_data(data)
                frames = list(framer.frames())
            except ProtocolError as exc:
                await self._write(self._endpoint.respond_error(None, PARSE_ERROR, exc.message))
                return
            for frame in frames:
                await self._dispatch(frame)

    async def _dispatch(self, frame: bytes) -> None:
        try:
            message = self._endpoint.receive(frame)
        except ProtocolError as exc:
            await self._write(self._endpoint.respond_error(None, PARSE_ERROR, exc.message))
            return
        match message:
            case Request():
                self._arrived(message)
            case Notification(method="session/cancel", params=params):
                try:
                    cancel = decode_as(params, s.SessionParams, "session/cancel params")
                except ProtocolError as exc:
                    log.warning("%s", exc.message)  # a notification has no one to answer
                    return
                self._nursery.start_soon(self._cancel, cancel.session_id)
            case Notification(method=method):
                log.debug("notification %s ignored", method)
            case Response(id=rid) | ErrorResponse(id=rid) if rid is not None and rid in self._calls:
                waiter = self._calls.pop(rid)
                waiter.answer = message
                waiter.done.set()

    async def respond(self, request_id: RequestId, result: Any) -> None:
        """Answer the editor's request ``request_id`` with ``result``."""
        await self._write(self._endpoint.respond(request_id, result))

    async def respond_error(self, request_id: RequestId, code: int, message: str, data: Any = None) -> None:
        """Fail the editor's request ``request_id`` with a JSON-RPC error."""
        await self._write(self._endpoint.respond_error(request_id, code, message, data))

    async def _write(self, line: bytes) -> None:
        async with self._send_lock:
            await self._stdout.send_all(line + b"\n")

    async def notify(self, session_id: str, update: s.Update) -> None:
        await self._write(self._endpoint.notify("session/update", s.UpdateParams(session_id=session_id,
                                                                                 update=update)))

    async def call(self, method: str, params: msgspec.Struct) -> Response | ErrorResponse:
        request_id, data = self._endpoint.request(method, params)
        waiter = self._calls[request_id] = Waiter()
        try:
            await self._write(data)
            await waiter.done.wait()
        finally:
            if self._calls.pop(request_id, None) is not None:
                self._endpoint.forget(request_id)
        answer: Response | ErrorResponse = waiter.answer
        return answer
