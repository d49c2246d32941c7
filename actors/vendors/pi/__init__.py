"""The pi harness: ``pi --mode rpc`` driven over its JSONL commands and events on stdio.

``launch`` builds the argv/env (and loads ``permission_gate.js``, corral's extension that asks
the client before a tool call that can change something), ``translate`` is the sans-IO protocol
core over the ``wire`` Structs, ``errors`` classifies failures into stable codes, ``detect`` finds
the binary, its version and models, ``driver`` ties them together.

The drivers and detection (trio, probe children) are imported on first use, so the sans-IO
translator, the launch builder and the wire Structs load without them (``supervisor.lazy``).
"""

import typing

from supervisor.lazy import lazy_exports as _lazy_exports

from .errors import classify as classify
from .launch import GATE as GATE
from .launch import build_launch as build_launch
from .translate import PiTranslator as PiTranslator
from .translate import tool_kind as tool_kind

if typing.TYPE_CHECKING:
    from .detect import FEATURES as FEATURES
    from .detect import MIN_VERSION as MIN_VERSION
    from .driver import PiDriver as PiDriver
else:
    __getattr__, __dir__ = _lazy_exports(__name__, {
        "FEATURES": "actors.vendors.pi.detect",
        "MIN_VERSION": "actors.vendors.pi.detect",
        "PiDriver": "actors.vendors.pi.driver",
    })
