"""The ACP v1 shapes both of corral's ACP roles read or write the same (camelCase on the wire).

corral speaks the Agent Client Protocol both ways round: as an *agent* for editors (``corral
acp``: ``supervisor.acp.schema``) and as a *client* of the vendors' agents
(``actors.vendors.acp.wire``). Their Structs mostly only look alike: the facade's replies are
encoded exactly (typed members, the required ones present, ``None`` left out) while an agent's
replies are decoded tolerantly (members optional, ``Any`` where variants differ between agent
versions), so a merged Struct would either send loose shapes or refuse an agent's. What is the same
shape both ways (each side reads it, or one writes what the other reads) lives here, once.
"""

from __future__ import annotations

import msgspec

__all__ = ["PROTOCOL_VERSION", "Location", "NameValue"]

PROTOCOL_VERSION = 1
"""The ACP version corral speaks in both roles (``initialize``'s ``protocolVersion``)."""


class NameValue(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """A ``{name, value}`` pair: ACP's ``EnvVariable`` (an MCP server's or a terminal's
    environment) and ``HttpHeader``."""

    name: str
    value: str


class Location(msgspec.Struct, rename="camel", kw_only=True, frozen=True, omit_defaults=True):
    """A file a tool call touches (``locations`` of a tool call); ``line`` is left out when
    ``None``."""

    path: str
    line: int | None = None
