"""The client-side jobs an ACP translator hands out as ``Work``, and their outcomes (pure data).

An agent calls the client for file access (``fs/*``) and terminals (``terminal/*``). The
translator decides *whether* (confinement, permission policy) and the work runner
(``work_runner``) does the I/O; these Structs are what passes between them. Every outcome is either ``Done`` with the
JSON-RPC ``result`` to send back, or ``Failed`` with a JSON-RPC error.

``Confinement`` is the rule both sides apply: an absolute path at or below the session cwd and
not in the daemon's state directory (its token, ledger and session logs), unless the cwd is a
worktree under it. The translator checks the path as written (``..`` collapsed), the work runner
again with symlinks resolved (as far as they exist), so a symlink out is refused too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import msgspec

__all__ = [
    "CloseTerminal", "Done", "Failed", "Job", "Outcome", "OpenTerminal", "ReadFile",
    "TerminalOutput", "WaitTerminal", "WriteFile", "Confinement", "inside", "NOT_FOUND", "DENIED",
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


def inside(root: str, path: str, resolve: Callable[[str], str] = os.path.realpath) -> bool:
    """Whether absolute ``path`` is ``root`` or below it, both through ``resolve`` (by default
    symlinks resolved; ``os.path.normpath`` for the path as written)."""
    if not os.path.isabs(path):
        return False
    real_root = resolve(root)
    real = resolve(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


class Confinement:
    """Where an agent's client-side jobs may go: ``root`` (the session cwd) and below, never
    into ``state_dir``. ``resolve`` is how paths are compared (see ``inside``)."""

    def __init__(self, root: str, state_dir: str | None = None, *,
                 resolve: Callable[[str], str] = os.path.realpath) -> None:
        self.root = root
        self._resolve = resolve
        # A worktree under the state directory (its default place) is the cwd: the cwd rule is
        # enough there. Any other overlap (the state directory inside the cwd, or the cwd being
        # the state directory or inside its sessions/) refuses the whole state directory.
        self.state_dir = state_dir
        if state_dir is not None and inside(state_dir, root, resolve) \
                and resolve(root) != resolve(state_dir) \
                and not inside(os.path.join(state_dir, "sessions"), root, resolve):
            self.state_dir = None

    def refusal(self, path: str) -> Failed | None:
        """Why ``path`` may not be touched (a ``DENIED`` failure for the agent), or ``None``."""
        if not os.path.isabs(path):
            return Failed(DENIED, f"{path} is not an absolute path")
        if self.state_dir is not None and inside(self.state_dir, path, self._resolve):
            return Failed(DENIED, f"{path} is inside corral's state directory")
        if not inside(self.root, path, self._resolve):
            return Failed(DENIED, f"{path} is outside the session's working directory {self.root}")
        return None
