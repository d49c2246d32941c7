"""The OpenCode harness: sessions on shared ``opencode serve`` processes, over HTTP and SSE.

``servers`` is the ``opencode`` supervisor (one ``server.OpenCodeServer`` actor per launch
fingerprint, leased by sessions); ``transport.ServerChild`` is a session's process-less child on
it; ``translate`` is the sans-IO core over the virtual wire of ``wire``; ``http`` a small h11
client; ``launch`` the server launch and its fingerprint; ``errors``, ``detect``, ``driver``.

The names below load their module on first use (PEP 562): the daemon needs only the shared servers' supervisor
at start; the rest comes with the harness's driver (``actors.session.drivers``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .detect import FEATURES as FEATURES
    from .driver import OpenCodeDriver as OpenCodeDriver
    from .launch import build_launch as build_launch
    from .launch import fingerprint as fingerprint
    from .launch import permission_rules as permission_rules
    from .server import OpenCodeServer as OpenCodeServer
    from .server import ServerSettings as ServerSettings
    from .servers import OpenCodeServers as OpenCodeServers
    from .translate import OpenCodeTranslator as OpenCodeTranslator
    from .transport import ServerChild as ServerChild
    from .transport import open_server_child as open_server_child

_EXPORTS = {
    "FEATURES": ".detect",
    "OpenCodeDriver": ".driver",
    "build_launch": ".launch",
    "fingerprint": ".launch",
    "permission_rules": ".launch",
    "OpenCodeServer": ".server",
    "ServerSettings": ".server",
    "OpenCodeServers": ".servers",
    "OpenCodeTranslator": ".translate",
    "ServerChild": ".transport",
    "open_server_child": ".transport",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
