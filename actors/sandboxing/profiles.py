"""What each harness must write besides its cwd: its own state, as narrow as its CLI allows.

A vendor CLI keeps its settings, login and conversations in its home; that home is writable in
the sandbox and nothing else of the user's home is. ``options.home`` (which the launch turns into
the variable below) and that variable in the session's env are honoured, so an isolated home
narrows it further. The fake harness needs nothing.

Of its session's directory under corral's state directory (``sessions/<id>/``: the event log,
``meta.json``, the usage index, …) a harness sees only its own parts (``session_parts``): the
files its launch placed in ``harness/`` (read-only: the daemon writes them before the spawn,
e.g. Claude Code's MCP configuration), and for the native agent its store ``native/``
(writable). The log and the metadata are never visible, so no session can rewrite its history.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["session_parts", "state_paths"]

_HOME_VARIABLE = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}
_DEFAULTS: dict[str, tuple[str, ...]] = {
    "claude": ("~/.claude", "~/.claude.json", "~/.cache/claude", "~/.local/state/claude"),
    "codex": ("~/.codex",),
    "opencode": ("~/.local/share/opencode", "~/.local/state/opencode", "~/.cache/opencode",
                 "~/.config/opencode"),
    "gemini": ("~/.gemini",),
    "copilot": ("~/.copilot",),
    "cursor": ("~/.cursor",),
    "pi": ("~/.pi",),
}


def state_paths(harness: str, env: Mapping[str, str]) -> list[Path]:
    """The paths ``harness`` writes its own state to, for a child with ``env`` (the launch's
    environment over the daemon's)."""
    variable = _HOME_VARIABLE.get(harness)
    if variable is not None and env.get(variable):
        return [Path(os.path.expanduser(env[variable]))]
    home = env.get("HOME") or os.path.expanduser("~")
    return [Path(home) / item.removeprefix("~/") for item in _DEFAULTS.get(_family(harness), ())]


_SESSION_WRITES: dict[str, tuple[str, ...]] = {"native": ("native",)}


def session_parts(harness: str, session_dir: Path) -> tuple[list[Path], list[Path]]:
    """The parts of ``session_dir`` that ``harness`` reads and those it writes."""
    return [session_dir / "harness"], [session_dir / part for part in _SESSION_WRITES.get(harness, ())]


def _family(harness: str) -> str:
    """``gemini-acp``, ``copilot-acp``, … share their CLI's profile."""
    for name in _DEFAULTS:
        if harness == name or harness.startswith((f"{name}-", f"{name}_")):
            return name
    return harness
