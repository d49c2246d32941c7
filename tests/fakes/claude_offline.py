"""Running the real Claude Code CLI offline: which binary, and the env that keeps it on 127.0.0.1.

``offline_env(port)`` points Claude Code at the fake Anthropic server
(``tests.fakes.anthropic_server``) on ``127.0.0.1:port`` with a dummy key and switches off its
other traffic (telemetry, auto-update, error reporting, non-essential requests). ``IS_SANDBOX=1``
lets ``--permission-mode bypassPermissions`` (corral's ``auto``) run as root. Give the child a
temporary ``HOME`` and config home as well (the driver's ``options.home``).
"""

from __future__ import annotations

import os
import shutil

PINNED = "2.1.197"
"""The Claude Code version the recordings were made with."""

INSTALL_HINT = f"npm install -g @anthropic-ai/claude-code@{PINNED}"

OFFLINE_ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-fake-key",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "IS_SANDBOX": "1",
}


def claude_binary() -> str | None:
    """The Claude Code binary if installed (``CORRAL_CLAUDE_BINARY`` overrides ``PATH``)."""
    explicit = os.environ.get("CORRAL_CLAUDE_BINARY")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("claude")


def offline_env(port: int) -> dict[str, str]:
    """The env that points Claude Code at the fake server on ``port`` and keeps it off the network."""
    return {**OFFLINE_ENV, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}
