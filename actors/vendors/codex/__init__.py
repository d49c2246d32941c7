"""The Codex harness: ``codex app-server`` driven over JSON-RPC (NDJSON on stdio).

``launch`` builds the argv/env, ``translate`` is the sans-IO protocol core over ``jsonrpc``
envelopes and ``messages`` Structs; ``params`` (policy mapping), ``approvals``, ``items`` (with
``stream``: deltas and tool phases) and ``accounting`` map requests, thread items and usage onto
the event model; ``errors`` classifies
failures into stable codes; ``detect`` finds the binary; ``driver`` ties them together.

The drivers and detection (trio, probe children) are imported on first use, so the sans-IO
translator, the launch builder and the wire Structs load without them (``supervisor.lazy``).
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports

from .errors import classify as classify
from .launch import build_launch as build_launch
from .launch import mcp_args as mcp_args
from .launch import mcp_env as mcp_env
from .params import thread_policy as thread_policy
from .translate import CodexTranslator as CodexTranslator

if typing.TYPE_CHECKING:
    from .detect import FEATURES as FEATURES
    from .detect import MIN_VERSION as MIN_VERSION
    from .driver import CodexDriver as CodexDriver
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "FEATURES": "actors.vendors.codex.detect",
        "MIN_VERSION": "actors.vendors.codex.detect",
        "CodexDriver": "actors.vendors.codex.driver",
    })
