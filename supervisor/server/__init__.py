"""The daemon's server side: boot and shutdown, listeners, the gate, connection actors, out-queues.

The daemon (trio, the ledger, listeners) is imported on first use, so the sans-IO
``connection_core`` loads without it (``supervisor.lazy``).
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from supervisor.server.daemon import Host as Host
    from supervisor.server.daemon import run_daemon as run_daemon
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "Host": "supervisor.server.daemon",
        "run_daemon": "supervisor.server.daemon",
    })
