"""The two ASGI answers both of the daemon's MCP endpoints give by hand: the lifespan protocol
(nothing to start or stop) and a short plain-text refusal. Pure functions over ASGI's
``receive``/``send``; importing this loads no server."""

from __future__ import annotations

from typing import Any

__all__ = ["lifespan", "plain"]


async def lifespan(receive: Any, send: Any) -> None:
    """Acknowledge the server's lifespan startup and shutdown; returns after the shutdown."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def plain(send: Any, status: int, text: str) -> None:
    """A whole response of ``status`` whose body is ``text`` (UTF-8, as given)."""
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
