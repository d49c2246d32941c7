"""What the fake model servers share: reading one whole HTTP/1.1 request with h11."""

from __future__ import annotations

import h11
import trio


async def read_request(conn: h11.Connection, stream: trio.SocketStream) -> tuple[h11.Request | None, bytes]:
    """The next whole request and its body, or ``(None, b"")`` when the client closed."""
    request: h11.Request | None = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await stream.receive_some(65536))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return request, bytes(body)
        elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return None, b""
