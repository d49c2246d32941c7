"""Section ``[daemon]`` of the configuration: the websocket listener and the daemon's lifetime.

Loaded by the generic ``supervisor.config`` loader as a part of the application's root Struct;
its range rules are the ``Meta`` constraints below, and a host beyond loopback is accepted with
a warning (``config_warnings``).
"""

from __future__ import annotations

import ipaddress
from typing import Annotated

from msgspec import Meta, Struct

__all__ = ["DaemonConfig"]

_Port = Annotated[int, Meta(ge=0, le=65535)]
_Host = Annotated[str, Meta(min_length=1)]
_Origin = Annotated[str, Meta(
    pattern="^[A-Za-z][A-Za-z0-9+.-]*://[^/ ]+$",  # scheme://host[:port], no path, no trailing /
    description="an origin such as http://localhost:3000 (no path, no trailing slash)",
)]
_Bytes = Annotated[int, Meta(ge=1024)]
_Capacity = Annotated[int, Meta(ge=1)]
_Seconds = Annotated[float, Meta(ge=0)]
_PositiveSeconds = Annotated[float, Meta(gt=0)]


class DaemonConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[daemon]``: the websocket listener and the daemon's own lifetime."""

    port: _Port = 7433  # 0 asks the OS for a free port
    host: _Host = "127.0.0.1"  # a non-loopback host is allowed, with a warning
    allowed_origins: list[_Origin] = []  # beyond the daemon's own http://127.0.0.1:PORT, localhost
    frame_limit: _Bytes = 16 * 1024 * 1024
    handshake_timeout: _PositiveSeconds = 10.0
    client_queue: _Capacity = 1024  # outgoing frames per connection before `lagged`
    shutdown_timeout: _Seconds = 30.0  # bound on the whole graceful shutdown

    def config_warnings(self) -> list[tuple[str, str]]:
        """Listening beyond loopback is the user's call, but never a silent one."""
        if self.host == "localhost":
            return []
        try:
            if ipaddress.ip_address(self.host).is_loopback:
                return []
        except ValueError:
            pass
        return [("host", f"is {self.host!r}, not a loopback address: "
                         "other machines can reach the daemon")]
