"""Section ``[acp]`` of the configuration: what ``corral acp`` creates sessions with.

Read by ``corral acp`` itself (a client of the daemon), not by the daemon; the application's
root Struct holds it so that one file configures both.
"""

from __future__ import annotations

from msgspec import Struct

__all__ = ["AcpConfig"]


class AcpConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[acp]``: the sessions ``corral acp`` (corral as an ACP agent) creates."""

    harness: str = ""  # the harness of new sessions; empty: claude when available, else native
