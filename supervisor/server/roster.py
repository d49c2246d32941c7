"""Who is connected: each open connection's id with the name and version its ``hello`` gave.

A connection enters it once its handshake is accepted and leaves it when it ends; the
application reads it to list the connections in ``daemon.status`` and to say who decided a
permission in words a person knows (``cli``, ``browser``) rather than ``c-10``.
"""

from __future__ import annotations

from protocol.models import ClientInfo, ConnectionInfo

__all__ = ["Roster"]


class Roster:
    """The open connections past their handshake, in the order they arrived."""

    def __init__(self) -> None:
        self._open: dict[str, ConnectionInfo] = {}

    def add(self, connection_id: str, client: ClientInfo) -> None:
        """Connection ``connection_id`` was welcomed; ``client`` is what its ``hello`` said."""
        self._open[connection_id] = ConnectionInfo(connection_id=connection_id, name=client.name,
                                                   version=client.version)

    def remove(self, connection_id: str) -> None:
        """The connection ended (idempotent)."""
        self._open.pop(connection_id, None)

    def name(self, connection_id: str) -> str:
        """The client name of ``connection_id``; the id itself when it gave none or is gone."""
        info = self._open.get(connection_id)
        return info.name if info is not None and info.name else connection_id

    def infos(self) -> list[ConnectionInfo]:
        return list(self._open.values())
