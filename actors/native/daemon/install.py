"""Where the native code lives and whether google-adk is installed: what the daemon asks of the
native harness at start (the fork server's cwd, whether to warm it up), without importing the
driver, its translator or the process child they bring (those load with the first native use)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

__all__ = ["NATIVE_ROOT", "adk_installed"]

NATIVE_ROOT = Path(__file__).resolve().parents[3]
"""The directory that holds ``actors`` (a source tree, or an install's site-packages): the cwd of
workers and of the fork server, so that their ``python -m`` imports this very code."""


def adk_installed() -> bool:
    """Whether google-adk is installed: its ``google.adk.runners`` module is found in the
    ``google.adk`` package, neither of them imported (the daemon asks at start)."""
    try:
        adk = importlib.util.find_spec("google.adk")
    except (ImportError, ValueError):
        return False
    if adk is None or not adk.submodule_search_locations:
        return False
    locations = list(adk.submodule_search_locations)
    return importlib.machinery.PathFinder.find_spec("google.adk.runners", locations) is not None
