"""The Claude Code driver: stream-json launch builder, sans-IO translator, errors and detection.

The drivers and detection (trio, probe children) are imported on first use, so the sans-IO
translator, the launch builder and the wire Structs load without them (``supervisor.lazy``).
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports

from .errors import classify as classify
from .launch import build_launch as build_launch
from .launch import mcp_config as mcp_config
from .translate import ClaudeTranslator as ClaudeTranslator

if typing.TYPE_CHECKING:
    from .detect import FEATURES as FEATURES
    from .detect import MIN_VERSION as MIN_VERSION
    from .detect import probe as probe
    from .driver import ClaudeDriver as ClaudeDriver
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "FEATURES": "actors.vendors.claude.detect",
        "MIN_VERSION": "actors.vendors.claude.detect",
        "probe": "actors.vendors.claude.detect",
        "ClaudeDriver": "actors.vendors.claude.driver",
    })
