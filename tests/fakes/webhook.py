"""A local webhook receiver for the notification tests: records each POST, answers as told.

``open_receiver()`` serves on 127.0.0.1 (a free port) in the caller's nursery. Each request is
recorded as a ``Received`` (method, target, headers, body). The answer is ``status`` (200 by
default); with ``hold=True`` it never answers: the request is recorded and the connection held
open until the receiver closes (a slow endpoint). ``wait_for(n)`` returns once ``n`` requests
came, ``held`` counts the requests held right now.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import h11
import msgspec
import trio

from tests.fakes.http import read_request


class Received(msgspec.Struct, frozen=True):
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    def __init__(self, status: int, hold: bool) -> None:
        self.status = status
        self.hold = hold
        self.port = 0
        self.received: list[Received] = []
        self.held = 0
        self._changed = trio.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def wait_for(self, count: int, *, held: int = 0) -> list[Received]:
        """The requests, once at least ``count`` came (and ``held`` are held). Cancellable."""
        while len(self.received) < count or self.held < held:
            await self._changed.wait()
        return list(self.received)

    def _note(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _serve(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        async with stream:
            while True:
                request, body = await read_request(conn, stream)
                if request is None:
                    return
                self.received.append(Received(
                    method=request.method.decode(), target=request.target.decode(),
                    headers={k.decode().lower(): v.decode() for k, v in request.headers}, body=body))
                if self.hold:
                    self.held += 1
                    self._note()
                    try:
                        await trio.sleep_forever()
                    finally:
                        self.held -= 1
                self._note()
                answer = b"ok"
                data = conn.send(h11.Response(status_code=self.status, headers=[
                    ("content-length", str(len(answer))), ("content-type", "text/plain")]))
                data = (data or b"") + (conn.send(h11.Data(data=answer)) or b"")
                data += conn.send(h11.EndOfMessage()) or b""
                await stream.send_all(data)
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()


@asynccontextmanager
async def open_receiver(*, status: int = 200, hold: bool = False) -> AsyncIterator[Receiver]:
    """A receiver serving until the block ends."""
    receiver = Receiver(status, hold)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, receiver._serve, 0,
                                                          host="127.0.0.1"))
        receiver.port = listeners[0].socket.getsockname()[1]
        yield receiver
        nursery.cancel_scope.cancel()


def refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
