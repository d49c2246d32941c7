"""ACP agents (Gemini CLI, Copilot, claude-code-acp, …): one driver, many profiles.

``profiles`` holds the agents as data; ``launch`` builds argv/env; ``translate`` is the sans-IO
protocol core over ``rpc`` (JSON-RPC 2.0 lines) and ``wire`` Structs, with ``updates``
(session updates → events), ``permissions`` (requests ↔ decisions) and ``client`` (the
translator's half of ``fs``/``terminal``); ``jobs`` and ``work_runner`` are the client-side I/O the
session runs as ``Work``; ``errors`` classifies failures; ``detect`` finds the binary;
``driver`` ties them together.

The drivers and detection (trio, probe children) are imported on first use, so the sans-IO
translator, the launch builder and the wire Structs load without them (``supervisor.lazy``); the
other names are lazy too, so the daemon, which needs only the profiles at start, loads the rest
with the harness's driver (``actors.session.drivers``).
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from .launch import build_launch as build_launch
    from .launch import mcp_servers as mcp_servers
    from .launch import minute_wait as minute_wait
    from .profiles import PROFILES as PROFILES
    from .profiles import Profile as Profile
    from .translate import AcpTranslator as AcpTranslator
    from .detect import FEATURES as FEATURES
    from .driver import AcpDriver as AcpDriver
    from .work_runner import AcpWorkRunner as AcpWorkRunner
    from .work_runner import open_work_runner as open_work_runner
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "build_launch": "actors.vendors.acp.launch",
        "mcp_servers": "actors.vendors.acp.launch",
        "minute_wait": "actors.vendors.acp.launch",
        "PROFILES": "actors.vendors.acp.profiles",
        "Profile": "actors.vendors.acp.profiles",
        "AcpTranslator": "actors.vendors.acp.translate",
        "FEATURES": "actors.vendors.acp.detect",
        "AcpDriver": "actors.vendors.acp.driver",
        "AcpWorkRunner": "actors.vendors.acp.work_runner",
        "open_work_runner": "actors.vendors.acp.work_runner",
    })
