"""Running the real OpenCode server offline: which binary, and the env and config that keep it
on 127.0.0.1 talking to the fake model server (Chat Completions through OpenCode's bundled
``@ai-sdk/openai-compatible``).

``offline_env(tmp)`` gives private XDG directories and switches off OpenCode's own traffic
(update checks, model catalogue fetch, default plugins, LSP downloads, sharing);
``provider_config(port)`` is the ``options.config`` of a session whose model is ``MODEL``.
OpenCode asks the model for a session title once per session: ``is_title_call`` recognizes those
requests so the fake answers them beside the script (``FakeModels(aside=title_aside)``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from tests.fakes.model_script import Step, say

__all__ = ["INSTALL_HINT", "KEY_ENV", "MODEL", "PINNED", "offline_env", "opencode_binary",
           "provider_config", "title_aside"]

PINNED = "1.18.33"
INSTALL_HINT = f"npm install -g opencode-ai@{PINNED}"
KEY_ENV = "CORRAL_FAKE_OPENCODE_KEY"
MODEL = "fake/fake-model"


def opencode_binary() -> str | None:
    """The ``opencode`` executable if installed (``CORRAL_OPENCODE_BINARY`` overrides)."""
    explicit = os.environ.get("CORRAL_OPENCODE_BINARY")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("opencode")


def offline_env(tmp: Path) -> dict[str, str]:
    """Private HOME and XDG directories under ``tmp``, OpenCode's traffic off, the fake key."""
    env = {"HOME": str(tmp / "home"), KEY_ENV: "test-key"}
    for name in ("DATA", "CONFIG", "STATE", "CACHE"):
        env[f"XDG_{name}_HOME"] = str(tmp / "xdg" / name.lower())
    for switch in ("AUTOUPDATE", "MODELS_FETCH", "DEFAULT_PLUGINS", "LSP_DOWNLOAD", "SHARE",
                   "CLAUDE_CODE", "EXTERNAL_SKILLS"):
        env[f"OPENCODE_DISABLE_{switch}"] = "true"
    for path in env.values():
        if path.startswith(str(tmp)):
            Path(path).mkdir(parents=True, exist_ok=True)
    return env


def provider_config(port: int) -> dict[str, Any]:
    """OpenCode config: provider ``fake`` at the fake server, its key from ``KEY_ENV``."""
    return {"provider": {"fake": {
        "npm": "@ai-sdk/openai-compatible", "name": "Fake",
        "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": f"{{env:{KEY_ENV}}}"},
        "models": {"fake-model": {"name": "Fake"}, "fake-other": {"name": "Other"}}}}}


def title_aside(record: Any) -> Step | None:
    """The answer to OpenCode's title-generation call, or ``None`` for any other request."""
    body = record.body
    messages = body.get("messages") if isinstance(body, dict) else None
    first = messages[0] if isinstance(messages, list) and messages else {}
    content = first.get("content") if isinstance(first, dict) else None
    return say("A title") if isinstance(content, str) and "title generator" in content else None
