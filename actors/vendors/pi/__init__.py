"""The pi harness: ``pi --mode rpc`` driven over its JSONL commands and events on stdio.

``launch`` builds the argv/env (and loads ``permission_gate.js``, corral's extension that asks
the client before a tool call that can change something), ``translate`` is the sans-IO protocol
core over the ``wire`` Structs, ``errors`` classifies failures into stable codes, ``detect`` finds
the binary, its version and models, ``driver`` ties them together.
"""

from .detect import FEATURES as FEATURES
from .detect import MIN_VERSION as MIN_VERSION
from .driver import PiDriver as PiDriver
from .errors import classify as classify
from .launch import GATE as GATE
from .launch import build_launch as build_launch
from .translate import PiTranslator as PiTranslator
from .translate import tool_kind as tool_kind
