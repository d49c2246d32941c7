"""Helpers for the tool tests: call a tool the way the worker will, and wait on processes."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from actors.native.tools import Limits, ToolOutcome, Workspace, call_tool


def call(ws: Workspace, name: str, **arguments: Any) -> ToolOutcome:
    """Run one tool call to completion on a fresh event loop."""
    return asyncio.run(call_tool(ws, name, arguments))


def small(root: Path, **limits: Any) -> Workspace:
    """A workspace with some limits lowered."""
    return Workspace(root, limits=Limits(**limits))


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Whether ``condition`` became true within ``timeout`` seconds (polled)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (a zombie waiting for its reaper counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def describe(pid: int) -> str:
    """What ``pid`` is now (status, parent, command line), for a failure message."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            return f"{proc.status()} ppid={proc.ppid()} pgid={os.getpgid(pid)} cmd={proc.cmdline()}"
    except (psutil.Error, OSError) as exc:
        return f"({type(exc).__name__})"
