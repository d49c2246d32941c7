"""The pre-upgrade checks of PROTOCOL.md: the path, the Origin allow-list and a loopback Host.

A present ``Origin`` that is not allow-listed is refused (cross-site websocket hijacking), and so
is a ``Host`` that does not name a loopback address (DNS rebinding). Requests on the Unix socket
skip the Host check: no browser can reach it.
"""

from __future__ import annotations

from collections.abc import Sequence

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
PATH = "/v1"


class Gate:
    """The pre-upgrade checks of PROTOCOL.md: path, Origin allow-list and loopback Host."""

    def __init__(self, port: int, extra_origins: Sequence[str] = ()) -> None:
        self.port = port
        self.own_origins = frozenset({f"http://127.0.0.1:{port}", f"http://localhost:{port}",
                                      f"http://[::1]:{port}"})
        self.origins = {*self.own_origins, *extra_origins}

    def refusal(self, path: str, host: str, headers: Sequence[tuple[bytes, bytes]], *,
                unix: bool) -> str | None:
        """Why this upgrade request is refused, or ``None`` to accept it."""
        if path.split("?", 1)[0] != PATH:
            return f"unknown path {path!r}; use {PATH}"
        return self.foreign(host, headers, unix=unix)

    def foreign(self, host: str, headers: Sequence[tuple[bytes, bytes]], *, unix: bool) -> str | None:
        """Why a request (websocket or plain HTTP) comes from where it must not, or ``None``."""
        origin = header(headers, b"origin")
        if origin is not None and origin not in self.origins:
            return f"origin {origin!r} is not allowed"
        if not unix and _host_name(host) not in LOOPBACK_HOSTS:
            return f"host {host!r} is not a loopback name"
        return None

    def from_own_page(self, headers: Sequence[tuple[bytes, bytes]]) -> bool:
        """True when the request carries the ``Origin`` of a page this daemon served."""
        return header(headers, b"origin") in self.own_origins


def header(headers: Sequence[tuple[bytes, bytes]], name: bytes) -> str | None:
    """The last value of header ``name`` (lower case), or ``None``."""
    value = None
    for key, raw in headers:
        if key.lower() == name:
            value = raw.decode("latin-1")
    return value


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if ":" in host else host
