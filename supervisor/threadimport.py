"""Importing a heavy module on first use without blocking the event loop.

The daemon imports at start only what a daemon with no session needs; the SDK stacks behind
some sessions (the MCP SDK and its pydantic models, hypercorn, the model SDKs) take from a
tenth of a second to over a second to import, which would stall every connection and session
if done on the trio thread. ``load`` imports such a module in a worker thread the first time,
and returns it at once every time after.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import trio

__all__ = ["load"]


async def load(name: str) -> ModuleType:
    """The module ``name``, imported in a worker thread unless it is already imported.

    A module another thread is still importing is waited for (through the import system's
    own lock, in the worker thread), never handed out half-initialized.
    """
    module = sys.modules.get(name)
    if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
        return module
    return await trio.to_thread.run_sync(importlib.import_module, name)
