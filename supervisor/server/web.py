"""The daemon's plain-HTTP front: the browser UI's page and assets, next to the websocket at ``/v1``.

Every accepted stream starts here. ``read_head`` parses the request head with h11 (at most
``MAX_HEAD`` bytes) and keeps the raw bytes it read: a websocket upgrade goes on to the
websocket (``websocket.WebSocket``), which is handed those bytes, anything else is plain HTTP and
gets one response from ``Site`` (then the stream closes: no keep-alive, no request bodies).

``Site.respond`` is the whole HTTP policy, pure (request in, ``Reply`` out):

* the Host and Origin checks of the websocket (``Gate.foreign``), and a fetch from another
  site (``Sec-Fetch-Site``) is refused: only the page's own requests and a typed-in URL pass;
* ``GET`` only (``405`` otherwise); the target is looked up in a fixed table of names built
  from the asset directory at start-up, so no path reaches the file system;
* ``/login?code=…`` trades a one-time code for the cookie (``logins.py``) and serves the page;
  ``/`` and the assets need that cookie; without it the answer is ``401`` "not authorised";
* every response carries ``Content-Security-Policy: default-src 'self'`` and its friends, and
  ``Cache-Control: no-store``.
"""

from __future__ import annotations

import re
from http import HTTPStatus
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qs, urlsplit

import h11
import trio

from protocol.messages import LoginCodeResult
from supervisor.server.gate import Gate, header
from supervisor.server.logins import CODE_TTL, COOKIE_TTL, Logins

__all__ = ["ASSETS", "MAX_HEAD", "Head", "Reply", "Site", "answer", "read_head"]

ASSETS = Path(__file__).with_name("ui")
MAX_HEAD = 16 * 1024
"""The largest request head (request line and headers) accepted, in bytes."""
_CHUNK = 4096
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
_ASSET_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*\.(html|js|css|svg)$")
_SECURITY = [
    ("Content-Security-Policy", "default-src 'self'; base-uri 'none'; form-action 'none'; "
                                "frame-ancestors 'none'; object-src 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    ("Cache-Control", "no-store"),
]
_DENIED = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>corral: not authorised</title>
</head><body><h1>not authorised</h1><p>{reason}. Run <code>corral ui</code> for a new link
(its code works once, within {ttl:g} seconds).</p></body></html>
"""


class Head(NamedTuple):
    """A request head and every byte read from the stream so far (the head and anything after)."""

    request: h11.Request
    raw: bytes

    @property
    def upgrade(self) -> bool:
        """True for a websocket upgrade request."""
        value = header(self.request.headers, b"upgrade") or ""
        return "websocket" in value.lower()


class Reply(NamedTuple):
    """One HTTP response."""

    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


async def read_head(stream: trio.abc.Stream) -> Head | None:
    """Read one request head; ``None`` (after answering ``400``/``431`` where it can) when the
    client closed first or sent no valid head within ``MAX_HEAD`` bytes. Cancellable."""
    parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    raw = bytearray()
    while True:
        try:
            event = parser.next_event()
        except h11.RemoteProtocolError as exc:
            status = exc.error_status_hint
            await _write(stream, parser, Reply(status, f"bad request: {exc}\n".encode()))
            return None
        if isinstance(event, h11.Request):
            return Head(event, bytes(raw))
        if event is not h11.NEED_DATA:
            return None
        if len(raw) >= MAX_HEAD:
            await _write(stream, parser, Reply(431, b"request head too large\n"))
            return None
        data = await stream.receive_some(_CHUNK)
        if not data:
            return None
        raw += data
        parser.receive_data(bytes(data))


class Site:
    """The HTTP routes (see the module docstring); ``login_code`` serves ``ui.login_code``."""

    def __init__(self, gate: Gate, logins: Logins, *, assets: Path = ASSETS,
                 clock: Callable[[], float] = time.time) -> None:
        self.gate = gate
        self.logins = logins
        self.clock = clock
        self.cookie_name = f"corral_ui_{gate.port}"  # cookies ignore ports: one name per daemon
        self.assets: dict[str, tuple[bytes, str]] = {}
        for path in sorted(assets.iterdir()) if assets.is_dir() else ():
            if _ASSET_NAME.match(path.name) and path.is_file():
                self.assets[f"/ui/{path.name}"] = (path.read_bytes(), _TYPES[path.suffix])

    def login_code(self) -> LoginCodeResult:
        """A fresh one-time code and the page's URL carrying it."""
        code = self.logins.mint(self.clock())
        return LoginCodeResult(code=code, url=f"http://127.0.0.1:{self.gate.port}/login?code={code}",
                               expires_in=CODE_TTL)

    def authorised(self, headers: Sequence[tuple[bytes, bytes]]) -> bool:
        """True when the request carries a valid cookie of ours and comes from our own page
        (a websocket opened by the page; the browser sets ``Origin`` itself)."""
        return self.gate.from_own_page(headers) and self._cookie_ok(headers)

    async def serve(self, stream: trio.abc.Stream, head: Head, *, unix: bool) -> None:
        """Answer the plain-HTTP request in ``head`` (the stream is closed by the caller)."""
        request = head.request
        host = header(request.headers, b"host") or ""
        reply = self.respond(request.method.decode("latin-1"), request.target.decode("latin-1"),
                             host, request.headers, unix=unix)
        await answer(stream, head.raw, reply)

    def respond(self, method: str, target: str, host: str, headers: Sequence[tuple[bytes, bytes]],
                *, unix: bool) -> Reply:
        """The reply to one request (see the module docstring)."""
        refusal = self.gate.foreign(host, headers, unix=unix)
        if refusal is None and (header(headers, b"sec-fetch-site") or "none") not in ("none", "same-origin"):
            refusal = "requests from other sites are not served"
        if refusal is not None:
            return Reply(403, f"forbidden: {refusal}\n".encode())
        if method != "GET":
            return Reply(405, b"method not allowed: only GET is served\n", headers=(("Allow", "GET"),))
        url = urlsplit(target)
        if url.path == "/login":
            codes = parse_qs(url.query).get("code", [])
            cookie = self.logins.redeem(codes[0], self.clock()) if len(codes) == 1 else None
            if cookie is None:
                reason = "this login code is missing, used already, expired or wrong"
                return _denied(reason)
            body, ctype = self.assets["/ui/index.html"]
            attributes = f"HttpOnly; SameSite=Strict; Path=/; Max-Age={int(COOKIE_TTL)}"
            return Reply(200, body, ctype, (("Set-Cookie", f"{self.cookie_name}={cookie}; {attributes}"),))
        asset = self.assets.get("/ui/index.html" if url.path == "/" else url.path)
        if asset is None or url.path == "/ui/index.html":
            return Reply(404, b"not found\n")
        if not self._cookie_ok(headers):
            return _denied("this browser has not logged in")
        return Reply(200, *asset)

    def _cookie_ok(self, headers: Sequence[tuple[bytes, bytes]]) -> bool:
        now = self.clock()
        prefix = self.cookie_name + "="
        for key, raw in headers:
            if key.lower() != b"cookie":
                continue
            for item in raw.decode("latin-1").split(";"):
                item = item.strip()
                if item.startswith(prefix) and self.logins.check(item[len(prefix):], now):
                    return True
        return False


def _denied(reason: str) -> Reply:
    return Reply(401, _DENIED.format(reason=reason, ttl=CODE_TTL).encode(), _TYPES[".html"])


async def answer(stream: trio.abc.Stream, raw: bytes, reply: Reply) -> None:
    """Send ``reply`` to the request whose bytes (head first) were ``raw``; the stream is closed
    by the caller. A client that is gone gets nothing."""
    parser = h11.Connection(h11.SERVER)
    parser.receive_data(raw)
    parser.next_event()  # the request again, so h11 lets us respond to it
    await _write(stream, parser, reply)


async def _write(stream: trio.abc.Stream, parser: h11.Connection, reply: Reply) -> None:
    headers = [("Content-Type", reply.content_type), ("Content-Length", str(len(reply.body))),
               ("Connection", "close"), *_SECURITY, *reply.headers]
    try:
        data = parser.send(h11.Response(status_code=reply.status, headers=headers,
                                          reason=HTTPStatus(reply.status).phrase.encode()))
        data = (data or b"") + (parser.send(h11.Data(data=reply.body)) or b"")
        data += parser.send(h11.EndOfMessage()) or b""
        await stream.send_all(data)
    except (h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the client is gone or the parser cannot answer this request: nothing to tell
