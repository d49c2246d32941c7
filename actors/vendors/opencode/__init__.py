"""The OpenCode harness: sessions on shared ``opencode serve`` processes, over HTTP and SSE.

``servers`` is the ``opencode`` supervisor (one ``server.OpenCodeServer`` actor per launch
fingerprint, leased by sessions); ``transport.ServerChild`` is a session's process-less child on
it; ``translate`` is the sans-IO core over the virtual wire of ``wire``; ``http`` a small h11
client; ``launch`` the server launch and its fingerprint; ``errors``, ``detect``, ``driver``.
"""

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
