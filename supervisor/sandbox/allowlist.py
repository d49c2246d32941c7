"""Which hosts a sandboxed session may reach through its proxy: pure data, no I/O.

An item is ``HOST`` (any port) or ``HOST:PORT``; an IPv6 literal is written ``[::1]`` or
``[::1]:443``. Names compare case-insensitively and without a trailing dot, so ``API.openai.com.``
is ``api.openai.com``. There are no wildcards: a sandbox names the hosts it talks to, and a
subdomain is another host. An address literal matches only itself (no DNS resolution here: the
proxy checks the name the client asked for, then connects to that name).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from protocol.errors import BadRequest

__all__ = ["Allowlist", "HostPort", "parse_host_port"]


class HostPort(msgspec.Struct, frozen=True):
    """One allowlist item: a normalised host and its port, ``None`` for any port."""

    host: str
    port: int | None = None


def parse_host_port(item: str, *, default_port: int | None = None) -> HostPort:
    """``HOST``, ``HOST:PORT``, ``[V6]`` or ``[V6]:PORT`` as a ``HostPort``.

    Raises ``BadRequest`` (one line, naming the item) for an empty host, a bad port or a stray
    bracket. ``default_port`` is the port of an item that names none.
    """
    text = item.strip()
    host, port_text = text, ""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise BadRequest(f"bad host {item!r}: unclosed '['")
        host, rest = text[1:end], text[end + 1:]
        if rest:
            if not rest.startswith(":"):
                raise BadRequest(f"bad host {item!r}: text after ']'")
            port_text = rest[1:]
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" in text:
        raise BadRequest(f"bad host {item!r}: write an IPv6 address as [ADDRESS]")
    host = host.strip().rstrip(".").lower()
    if not host or any(c.isspace() or c in "/@?#" for c in host):
        raise BadRequest(f"bad host {item!r}")
    if not port_text:
        return HostPort(host, default_port)
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise BadRequest(f"bad port in {item!r}")
    return HostPort(host, int(port_text))


class Allowlist(msgspec.Struct, frozen=True):
    """The hosts a session may reach; ``allows(host, port)`` is the proxy's one question."""

    items: tuple[HostPort, ...] = ()

    @classmethod
    def parse(cls, items: Iterable[str]) -> Allowlist:
        """From ``HOST``/``HOST:PORT`` strings; duplicates dropped, order kept. ``BadRequest``
        names the first bad item."""
        seen: dict[HostPort, None] = {}
        for item in items:
            seen.setdefault(parse_host_port(item), None)
        return cls(tuple(seen))

    def allows(self, host: str, port: int) -> bool:
        """Whether ``host:port`` is on the list (a bare host allows every port)."""
        name = host.strip().strip("[]").rstrip(".").lower()
        return any(item.host == name and item.port in (None, port) for item in self.items)

    def __str__(self) -> str:
        return ", ".join(_show(item) for item in self.items) or "(nothing)"


def _show(item: HostPort) -> str:
    host = f"[{item.host}]" if ":" in item.host else item.host
    return host if item.port is None else f"{host}:{item.port}"
