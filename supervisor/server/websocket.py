"""The server end of one websocket, on wsproto: the upgrade, messages in, bursts of text frames
out, the close handshake.

The daemon owns this end rather than borrowing a library's connection object because of what it
does differently from a general-purpose one:

* **Reading happens in the caller's task.** ``receive`` reads the stream itself (no reader task
  and no message channel between the socket and the connection actor); control frames are
  answered on the way (a ``ping`` gets its ``pong``, a ``close`` its echo).
* **A burst of frames is one write** (``send_text``): the connection's writer hands over every
  event queued for the client and they go to the socket at once, without a schedule point when
  the socket has room (``write_nowait``). Each write wakes the client, and each schedule point
  costs the daemon a pass of the scheduler per event. ``send_text_nowait`` writes without
  awaiting at all, as far as the socket takes the bytes; the rest is ``pending`` and goes first
  in the next write, so frames never interleave.
* **Errors the protocol names.** A message over ``max_message`` gets an ``error`` frame
  ``frame_too_large`` and then close code 1009 with that reason; a frame wsproto cannot parse
  (a text frame that is not UTF-8, a framing error) gets the close code RFC 6455 gives it
  (1007, 1002) instead of a dropped stream.

Closing. Once the peer's close frame has been echoed, our own close frame sent after a protocol
error, or the stream broken or ended, the websocket is ``closed`` and every call raises
``ConnectionClosed``; ``aclose`` (idempotent) sends our close frame if none went yet, waits for
the peer's (the caller bounds the wait) and closes the stream. The stream is never read by two
tasks: ``receive`` and ``aclose`` must not run at once. Writes (``send_text``, control frames)
are serialised by one lock.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Sequence

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import RemoteProtocolError

from protocol.codec import encode
from protocol.errors import ErrorCode
from protocol.messages import ErrorFrame
from supervisor.proc.pipes import write_nowait

__all__ = ["ABNORMAL_CLOSURE", "MESSAGE_TOO_BIG", "ConnectionClosed", "WebSocket"]

ABNORMAL_CLOSURE = 1006
"""The code of a websocket whose stream ended without a close handshake (never sent on the wire)."""
MESSAGE_TOO_BIG = 1009
_RECEIVE_SIZE = 65536
_REASON = 120  # a close frame's reason fits in 123 bytes


class ConnectionClosed(Exception):
    """The websocket is closed (``code``/``reason``: why, as the close frame said or 1006)."""

    def __init__(self, code: int, reason: str | None) -> None:
        super().__init__(code, reason)
        self.code = code
        self.reason = reason


class WebSocket:
    """One accepted stream's websocket, server side (see the module docstring).

    ``received`` is what was read off the stream already (the request head, by the listener).
    """

    def __init__(self, stream: trio.abc.Stream, received: bytes = b"", *, max_message: int) -> None:
        self.stream = stream
        self.max_message = max_message
        self.closed: ConnectionClosed | None = None
        """Why the websocket closed, once it has."""
        self._wsproto = WSConnection(ConnectionType.SERVER)
        self._received = received
        self._lock = trio.Lock()
        self._pending = b""
        """Bytes ``send_text_nowait`` could not write: they go first in the next write."""
        self._messages: deque[str | bytes] = deque()
        self._parts: list[str | bytes] = []
        self._size = 0

    # --- the upgrade ------------------------------------------------------------------------

    async def request(self) -> Request | None:
        """The upgrade request, or ``None`` when the stream ended or the request was malformed
        (it was then answered ``400``). Call once, before anything else."""
        while True:
            for event in self._wsproto.events():
                if isinstance(event, Request):
                    return event
            data = self._received or await self._receive_some()
            self._received = b""
            if not data:
                self._set_closed(ABNORMAL_CLOSURE, None)
                return None
            try:
                self._wsproto.receive_data(data)
            except RemoteProtocolError as exc:
                if isinstance(exc.event_hint, RejectConnection):
                    with contextlib.suppress(ConnectionClosed):
                        await self._send_events(exc.event_hint)
                self._set_closed(ABNORMAL_CLOSURE, None)
                await trio.aclose_forcefully(self.stream)
                return None

    async def accept(self) -> None:
        """Accept the upgrade: from now on messages flow."""
        await self._send_events(AcceptConnection())

    async def reject(self, status: int, body: bytes) -> None:
        """Refuse the upgrade with an HTTP ``status`` and a plain-text ``body``."""
        await self._send_events(
            RejectConnection(status_code=status, headers=[(b"Content-Length", str(len(body)).encode())],
                             has_body=True),
            RejectData(data=body))
        self._set_closed(ABNORMAL_CLOSURE, "upgrade refused")

    # --- messages ---------------------------------------------------------------------------

    async def receive(self) -> str | bytes:
        """The next message (text as ``str``); raises ``ConnectionClosed`` once closed. Cancellable
        without loss: a message read in part is kept for the next call."""
        while not self._messages:
            if self.closed is not None:
                raise self.closed
            data = await self._receive_some()
            if not data:
                raise self._set_closed(ABNORMAL_CLOSURE, None)
            self._wsproto.receive_data(data)
            await self._take_events()
        return self._messages.popleft()

    async def send_text(self, frames: Sequence[bytes]) -> bool:
        """Send ``frames`` (UTF-8 JSON) as text messages with one write, after what is
        ``pending``; whether that took a schedule point (none when the socket had room for all
        of it and the lock was free). Raises ``ConnectionClosed`` once the websocket is closed."""
        if self.closed is not None or self._wsproto.state is not ConnectionState.OPEN:
            raise self.closed or ConnectionClosed(ABNORMAL_CLOSURE, None)
        return await self._write(b"".join(_text_frame(frame) for frame in frames))

    @property
    def pending(self) -> bool:
        """Whether bytes of an earlier ``send_text_nowait`` still wait to be written."""
        return bool(self._pending)

    def writable_now(self) -> bool:
        """Whether ``send_text_nowait`` may be called: open, no write under way or pending."""
        return (self.closed is None and not self._pending and not self._lock.locked()
                and self._wsproto.state is ConnectionState.OPEN)

    def send_text_nowait(self, frames: Sequence[bytes]) -> None:
        """Write ``frames`` as text messages as far as the socket takes them now, without a
        schedule point; the rest is ``pending`` and goes first in the next write (``send_text``
        with no frames writes just that). Only when ``writable_now()``. A broken stream closes
        the websocket (the next ``send_text`` raises ``ConnectionClosed``)."""
        data = b"".join(_text_frame(frame) for frame in frames)
        try:
            written = _write_now(self.stream, data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._set_closed(ABNORMAL_CLOSURE, None)
            return
        self._pending = data[written:]

    async def aclose(self, code: int = 1000, reason: str | None = None) -> None:
        """Close: our close frame (``code``, ``reason``) if none was sent, the peer's awaited, then
        the stream closed (also when cancelled). Idempotent."""
        try:
            if self.closed is None and self._wsproto.state is ConnectionState.OPEN:
                self._set_closed(code, reason)
                await self._send_events(CloseConnection(code=code, reason=reason))
                while self._state() is not ConnectionState.CLOSED:
                    data = await self._receive_some()
                    if not data:
                        break
                    self._wsproto.receive_data(data)
                    for _ in self._wsproto.events():
                        pass  # anything but the peer's close is too late now
        except ConnectionClosed:
            pass
        finally:
            if self.closed is None:
                self._set_closed(code, reason)
            await trio.aclose_forcefully(self.stream)

    # --- internals --------------------------------------------------------------------------

    async def _take_events(self) -> None:
        for event in self._wsproto.events():
            match event:
                case TextMessage() | BytesMessage():
                    if self._size + len(event.data) > self.max_message:
                        await self._too_big()
                        return
                    self._size += len(event.data)
                    self._parts.append(event.data if isinstance(event.data, str) else bytes(event.data))
                    if event.message_finished:
                        parts, self._parts, self._size = self._parts, [], 0
                        message: str | bytes
                        if isinstance(event, TextMessage):
                            message = "".join(parts)  # type: ignore[arg-type]
                        else:
                            message = b"".join(parts)  # type: ignore[arg-type]
                        self._messages.append(message)
                case Ping():
                    await self._send_events(event.response())
                case CloseConnection(code=code, reason=reason):
                    await self._closed_by(code, reason)
                    return

    async def _too_big(self) -> None:
        """An oversized message: the protocol's error, then close 1009 (no wait for the echo)."""
        error = ErrorFrame(id=None, code=ErrorCode.FRAME_TOO_LARGE.value,
                           message=f"frame exceeds the {self.max_message}-byte limit")
        reason = ErrorCode.FRAME_TOO_LARGE.value
        self._parts, self._size = [], 0
        try:
            await self._write(_text_frame(encode(error)))
            await self._send_events(CloseConnection(code=MESSAGE_TOO_BIG, reason=reason))
        finally:
            self._set_closed(MESSAGE_TOO_BIG, reason)

    async def _closed_by(self, code: int, reason: str | None) -> None:
        """The peer's close frame (echoed), or one wsproto made of a frame it cannot parse while
        the connection is open (sent: RFC 6455 says to fail the connection, with the reason)."""
        try:
            if self._wsproto.state is ConnectionState.REMOTE_CLOSING:
                await self._send_events(CloseConnection(code=code, reason=reason))
            elif self._wsproto.state is ConnectionState.OPEN:
                await self._send_events(CloseConnection(code=code, reason=(reason or "")[:_REASON]))
        finally:
            self._set_closed(code, reason or None)
            await trio.aclose_forcefully(self.stream)

    async def _send_events(self, *events: Event) -> None:
        await self._write(b"".join(self._wsproto.send(event) for event in events))

    async def _write(self, data: bytes) -> bool:
        waited = False
        try:
            self._lock.acquire_nowait()  # the usual case: no schedule point of its own
        except trio.WouldBlock:
            await self._lock.acquire()
            waited = True
        if self._pending:
            data, self._pending = self._pending + data, b""
        try:
            written = _write_now(self.stream, data)
            if written < len(data):
                await self.stream.send_all(memoryview(data)[written:])
                waited = True
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise self._set_closed(ABNORMAL_CLOSURE, None) from None
        finally:
            self._lock.release()
        return waited

    async def _receive_some(self) -> bytes:
        try:
            return bytes(await self.stream.receive_some(_RECEIVE_SIZE))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return b""

    def _state(self) -> ConnectionState:
        return self._wsproto.state

    def _set_closed(self, code: int, reason: str | None) -> ConnectionClosed:
        """Note why the websocket closed (the first reason stays); that reason."""
        if self.closed is None:
            self.closed = ConnectionClosed(code, reason)
        return self.closed


def _write_now(stream: trio.abc.Stream, data: bytes) -> int:
    """Write what the socket under ``stream`` takes of ``data`` now, without blocking; how many
    bytes that was (0 for a stream that is not a socket: ``send_all`` then writes it all). The
    caller holds the write lock, so no other write is under way."""
    if not isinstance(stream, trio.SocketStream):
        return 0
    return write_nowait(stream.socket.fileno(), data, "client's socket")


def _text_frame(payload: bytes) -> bytes:
    """One unmasked, unfragmented text frame (RFC 6455 §5.2) as a server sends it: what wsproto
    makes of ``TextMessage`` when no extension was negotiated (this server offers none), without
    decoding the UTF-8 JSON to ``str`` and encoding it back."""
    size = len(payload)
    if size < 126:
        return bytes((0x81, size)) + payload
    if size < 1 << 16:
        return bytes((0x81, 126)) + size.to_bytes(2, "big") + payload
    return bytes((0x81, 127)) + size.to_bytes(8, "big") + payload
