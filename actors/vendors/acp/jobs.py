"""The client-side jobs an ACP translator hands out as ``Work``, and their outcomes (pure data).

An agent calls the client for file access (``fs/*``) and terminals (``terminal/*``). The
translator decides *whether* (confinement, permission policy) and the worker (``worker``) does
the I/O; these Structs are what passes between them. Every outcome is either ``Done`` with the
JSON-RPC ``result`` to send back, or ``Failed`` with a JSON-RPC error.

``inside(root, path)`` is the confinement rule both sides apply: an absolute path whose real
location (symlinks resolved, as far as they exist) is ``root`` or below it.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

__all__ = [
    "CloseTerminal", "Done", "Failed", "Job", "Outcome", "OpenTerminal", "ReadFile",
    "TerminalOutput", "WaitTerminal", "WriteFile", "inside", "NOT_FOUND", "DENIED",
]

NOT_FOUND = -32002
"""ACP's "resource not found"."""
DENIED = -32000
"""What a refused request is answered with (outside the cwd, denied by the user)."""


class _Job(msgspec.Struct, frozen=True, kw_only=True):
    pass


class ReadFile(_Job, tag="read", frozen=True, kw_only=True):
    """Read a text file; ``line`` (1-based) and ``limit`` (lines) select a slice."""

    path: str
    line: int | None = None
    limit: int | None = None
    missing_empty: bool = False
    """Answer a missing file with empty content (the ``missing_file_empty`` quirk)."""


class WriteFile(_Job, tag="write", frozen=True, kw_only=True):
    """Write a text file (parents are created, inside the root only)."""

    path: str
    content: str


class OpenTerminal(_Job, tag="terminal_create", frozen=True, kw_only=True):
    """Start a command in its own process group; output is kept up to ``limit`` bytes (the tail)."""

    command: str
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str
    limit: int


class TerminalOutput(_Job, tag="terminal_output", frozen=True, kw_only=True):
    terminal_id: str


class WaitTerminal(_Job, tag="terminal_wait", frozen=True, kw_only=True):
    terminal_id: str


class CloseTerminal(_Job, tag="terminal_close", frozen=True, kw_only=True):
    """Kill the terminal's process group; ``release`` also forgets it (``terminal/release``)."""

    terminal_id: str
    release: bool = False


Job = ReadFile | WriteFile | OpenTerminal | TerminalOutput | WaitTerminal | CloseTerminal


class Done(msgspec.Struct, frozen=True):
    """The job succeeded; ``result`` is the JSON-RPC result for the agent."""

    result: Any = None


class Failed(msgspec.Struct, frozen=True):
    """The job failed; the agent gets a JSON-RPC error with ``code`` and ``message``."""

    code: int
    message: str


Outcome = Done | Failed


def inside(root: str, path: str) -> bool:
    """Whether absolute ``path`` is ``root`` or below it, symlinks resolved."""
    if not os.path.isabs(path):
        return False
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)
