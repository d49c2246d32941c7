"""The proxy's request head, sans-IO: find it in a byte buffer, parse it, rewrite it.

A client of an HTTP proxy sends either ``CONNECT host:port HTTP/1.1`` (a tunnel, for HTTPS) or
an absolute-form request ``GET http://host[:port]/path HTTP/1.1`` (plain HTTP, forwarded). Anything
else is refused: an origin-form target (``GET /``: the client took the proxy for a server), an
``https://`` absolute target (a client must tunnel TLS), user info in the authority, a missing or
bad port, non-ASCII bytes, a header line without a colon, a head over the size limit. Errors are
typed: ``ProtocolError`` (the peer sent garbage: 400) and ``FrameTooLarge`` (431).

The plain-HTTP head is rewritten to origin-form for the upstream server, without the hop-by-hop
headers (``Proxy-*``, ``Connection``, ``Keep-Alive`` and those ``Connection`` names) and with
``Connection: close``: one upstream connection carries one request, so a client cannot send a
second request on it that was meant for another host.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import msgspec

from protocol.errors import BadRequest, FrameTooLarge, ProtocolError
from supervisor.sandbox.allowlist import parse_host_port

__all__ = ["HEAD_END", "ProxyRequest", "find_head", "parse_head"]

HEAD_END = b"\r\n\r\n"

_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization",
                         "proxy-authenticate", "te", "trailer", "upgrade"})


class ProxyRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One parsed request head: where it goes and, for plain HTTP, the head to send there."""

    method: str
    host: str
    port: int
    tunnel: bool
    """``CONNECT``: answer 200 and relay bytes both ways."""
    upstream_head: bytes = b""
    """Plain HTTP: the rewritten head (origin-form, ``Connection: close``) for the server."""


def find_head(buffer: bytes | bytearray, limit: int) -> int | None:
    """The length of the complete head at the start of ``buffer`` (through its blank line), or
    ``None`` while more bytes are needed. ``FrameTooLarge`` once ``limit`` bytes hold no head."""
    end = buffer.find(HEAD_END, 0, limit + len(HEAD_END))
    if end >= 0 and end + len(HEAD_END) <= limit:
        return end + len(HEAD_END)
    if len(buffer) >= limit:
        raise FrameTooLarge(f"request head larger than {limit} bytes")
    return None


def parse_head(head: bytes) -> ProxyRequest:
    """Parse one request head (as delimited by ``find_head``); ``ProtocolError`` for garbage."""
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        raise ProtocolError("request head is not ASCII") from None
    lines = text[: -len(HEAD_END)].split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[2].startswith("HTTP/1."):
        raise ProtocolError(f"bad request line {_clip(lines[0])!r}")
    method, target, version = parts
    headers = [_header(line) for line in lines[1:]]
    if method.upper() == "CONNECT":
        where = _authority(target, default_port=None)
        return ProxyRequest(method="CONNECT", host=where.host, port=where.port, tunnel=True)
    return _forward(method, target, version, headers)


def _forward(method: str, target: str, version: str, headers: list[tuple[str, str]]) -> ProxyRequest:
    if not target.lower().startswith("http://"):
        if target.lower().startswith("https://"):
            raise ProtocolError("an https:// request must use CONNECT")
        raise ProtocolError(f"not a proxy request (target {_clip(target)!r})")
    url = urlsplit(target)
    where = _authority(url.netloc, default_port=80)
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    dropped = {name.strip().lower() for n, v in headers if n.lower() == "connection" for name in v.split(",")}
    kept = [(n, v) for n, v in headers if n.lower() not in _HOP_BY_HOP and n.lower() not in dropped]
    if not any(n.lower() == "host" for n, _ in kept):
        kept.insert(0, ("Host", url.netloc))
    lines = [f"{method} {path} {version}", *(f"{n}: {v}" for n, v in kept), "Connection: close"]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")
    return ProxyRequest(method=method, host=where.host, port=where.port, tunnel=False, upstream_head=head)


def _authority(text: str, *, default_port: int | None) -> _Where:
    if "@" in text:
        raise ProtocolError("user info in a proxy target is refused")
    try:
        item = parse_host_port(text, default_port=default_port)
    except BadRequest as exc:
        raise ProtocolError(f"bad proxy target {_clip(text)!r}") from exc
    if item.port is None:
        raise ProtocolError(f"proxy target {_clip(text)!r} has no port")
    return _Where(item.host, item.port)


class _Where(msgspec.Struct, frozen=True):
    host: str
    port: int


def _header(line: str) -> tuple[str, str]:
    name, colon, value = line.partition(":")
    if not colon or not name or name != name.strip() or " " in name:
        raise ProtocolError(f"bad header line {_clip(line)!r}")
    return name, value.strip()


def _clip(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."
