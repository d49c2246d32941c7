"""The OpenCode harness: sessions on shared ``opencode serve`` processes, over HTTP and SSE.

``servers`` is the ``opencode`` supervisor (one ``server.OpenCodeServer`` actor per launch
fingerprint, leased by sessions); ``transport.ServerChild`` is a session's process-less child on
it; ``translate`` is the sans-IO core over the virtual wire of ``wire``; ``http`` a small h11
client; ``launch`` the server launch and its fingerprint; ``errors``, ``detect``, ``driver``.

The drivers, the server actors and the transport (trio, HTTP, child processes) are imported on
first use, so the sans-IO translator, the launch builder and ``wire`` load without them
(``supervisor.lazy``); so are the other names, which the daemon loads with the harness's driver
(``actors.session.drivers``).
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from .launch import build_launch as build_launch
    from .launch import fingerprint as fingerprint
    from .launch import permission_rules as permission_rules
    from .translate import OpenCodeTranslator as OpenCodeTranslator
    from .detect import FEATURES as FEATURES
    from .driver import OpenCodeDriver as OpenCodeDriver
    from .server import OpenCodeServer as OpenCodeServer
    from .server import ServerSettings as ServerSettings
    from .servers import OpenCodeServers as OpenCodeServers
    from .transport import ServerChild as ServerChild
    from .transport import open_server_child as open_server_child
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "build_launch": "actors.vendors.opencode.launch",
        "fingerprint": "actors.vendors.opencode.launch",
        "permission_rules": "actors.vendors.opencode.launch",
        "OpenCodeTranslator": "actors.vendors.opencode.translate",
        "FEATURES": "actors.vendors.opencode.detect",
        "OpenCodeDriver": "actors.vendors.opencode.driver",
        "OpenCodeServer": "actors.vendors.opencode.server",
        "ServerSettings": "actors.vendors.opencode.server",
        "OpenCodeServers": "actors.vendors.opencode.servers",
        "ServerChild": "actors.vendors.opencode.transport",
        "open_server_child": "actors.vendors.opencode.transport",
    })
