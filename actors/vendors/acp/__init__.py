"""ACP agents (Gemini CLI, Copilot, claude-code-acp, …): one driver, many profiles.

``profiles`` holds the agents as data; ``launch`` builds argv/env; ``translate`` is the sans-IO
protocol core over ``rpc`` (JSON-RPC 2.0 lines) and ``wire`` Structs, with ``updates``
(session updates → events), ``permissions`` (requests ↔ decisions) and ``client`` (the
translator's half of ``fs``/``terminal``); ``jobs`` and ``work_runner`` are the client-side I/O the
session runs as ``Work``; ``errors`` classifies failures; ``detect`` finds the binary;
``driver`` ties them together.

The names below load their module on first use (PEP 562): the daemon needs only the profiles
at start; the rest comes with the harness's driver (``actors.session.drivers``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .detect import FEATURES as FEATURES
    from .driver import AcpDriver as AcpDriver
    from .launch import build_launch as build_launch
    from .launch import mcp_servers as mcp_servers
    from .launch import minute_wait as minute_wait
    from .profiles import PROFILES as PROFILES
    from .profiles import Profile as Profile
    from .translate import AcpTranslator as AcpTranslator
    from .work_runner import AcpWorkRunner as AcpWorkRunner
    from .work_runner import open_work_runner as open_work_runner

_EXPORTS = {
    "FEATURES": ".detect",
    "AcpDriver": ".driver",
    "build_launch": ".launch",
    "mcp_servers": ".launch",
    "minute_wait": ".launch",
    "PROFILES": ".profiles",
    "Profile": ".profiles",
    "AcpTranslator": ".translate",
    "AcpWorkRunner": ".work_runner",
    "open_work_runner": ".work_runner",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
