"""A session's sandbox: what ``session.create`` asks for and what the session then carries.

``options.sandbox`` of ``session.create`` decodes as ``SandboxOptions`` (``[sandbox]`` in the
config gives the defaults); the session objects and its ``init`` event carry ``SandboxInfo``:
the settings as asked plus the confinement actually in force (``effective``). A session that is
not sandboxed (``mode = "off"``) carries none: ``SessionInfo.sandbox`` is null and ``init`` has
no ``sandbox`` field. A mode that cannot be honoured is ``sandbox_unavailable``, never a session
that runs unconfined.
"""

from __future__ import annotations

from typing import Literal

from .base import Data

SandboxMode = Literal["off", "auto", "bwrap", "landlock"]
"""``off``: unconfined (today's behaviour); ``auto``: bubblewrap where it works, else Landlock;
``bwrap``/``landlock``: that one or ``sandbox_unavailable``."""

SandboxEffective = Literal["bwrap", "landlock", "off"]
"""The confinement in force. A sandboxed session's is ``bwrap`` or ``landlock``; ``off`` is
what ``mode = "off"`` resolves to (such a session carries no ``SandboxInfo``)."""

NetMode = Literal["on", "model", "off"]
"""``on``: the host's network; ``model``: only the model endpoints' hosts plus ``allow_hosts``,
through the daemon's proxy; ``off``: none, not even the host's loopback."""


class SandboxOptions(Data, kw_only=True, frozen=True):
    """``session.create`` ``options.sandbox``: every field optional, ``[sandbox]`` fills the rest.

    ``allow_hosts`` items are ``HOST`` (any port) or ``HOST:PORT``. ``extra_rw`` are paths the
    session may write besides its cwd; ``deny_read`` are paths it may not see at all (added to
    ``[sandbox] deny_read``), winning over the cwd and ``extra_rw``. ``~`` is expanded.
    """

    mode: SandboxMode | None = None
    net: NetMode | None = None
    allow_hosts: list[str] | None = None
    extra_rw: list[str] | None = None
    deny_read: list[str] | None = None


class SandboxInfo(Data, kw_only=True, frozen=True):
    """A sandboxed session's settings (``SessionInfo.sandbox``, ``init.sandbox``): ``mode`` as
    asked, ``effective`` the confinement in force, and the resolved lists (paths absolute)."""

    mode: SandboxMode
    effective: SandboxEffective
    net: NetMode
    allow_hosts: list[str] = []
    extra_rw: list[str] = []
    deny_read: list[str] = []
