"""Running the pinned ACP agents offline against ``tests.fakes.model_server``.

``offline(agent, port, home)`` gives the ``env`` and ``options`` of a ``session.create`` (or a
``HarnessRequest``) that point the agent at the fake server on ``127.0.0.1:port`` with a dummy
key and keep it off the network; ``home`` is a temporary directory for its config.

* ``gemini``: ``GOOGLE_GEMINI_BASE_URL`` selects gateway auth (no ``authenticate``); a settings
  file turns off auto-update, telemetry, usage statistics and IDE mode; the workspace is trusted.
  A fixed model (``gemini-2.5-flash``) skips the model router; its helper calls (non-streaming
  ``generateContent``) are ``aside``.
* ``copilot``: bring-your-own-key mode (``COPILOT_OFFLINE``, ``COPILOT_PROVIDER_*``), Chat
  Completions at ``/v1``, ``COPILOT_HOME`` in ``home``.
* ``claude-acp``: Claude Code's switches (``IS_SANDBOX=1`` as root), ``CLAUDE_CONFIG_DIR`` in
  ``home``; its title, "files modified" and token-count calls on a small model are ``aside``.
* ``codex-acp``: Codex's offline switches (``tests.fakes.codex_offline``, Responses at ``/v1``)
  as ``-c`` overrides in ``options.extra_args``, ``CODEX_HOME`` in ``home``; ``PATH`` gains the
  Codex CLI's bundled ``bwrap`` when the system has none (its sandbox needs one).
* ``opencode-acp``: ``opencode acp`` with ``tests.fakes.opencode_offline``'s private XDG
  directories and switches, its fake provider in ``OPENCODE_CONFIG_CONTENT`` (Chat Completions
  at ``/v1``); the model ``fake/fake-model`` is set through its ``model`` config option; its
  title-generation calls are ``aside``.

``PINNED`` are the versions ``.ci/run`` installs and the recordings were made with.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from tests.fakes import codex_offline, opencode_offline
from tests.fakes.model_server import Recorded

__all__ = ["AGENTS", "MODELS", "PINNED", "aside", "binary", "install_hint", "offline"]

PINNED = {"gemini": "0.61.0", "copilot": "1.0.102", "claude-acp": "0.16.2",
          "opencode-acp": opencode_offline.PINNED, "codex-acp": "0.16.0"}
PACKAGES = {"gemini": "@google/gemini-cli", "copilot": "@github/copilot",
            "claude-acp": "@zed-industries/claude-code-acp", "opencode-acp": "opencode-ai",
            "codex-acp": "@zed-industries/codex-acp"}
BINARIES = {"gemini": "gemini", "copilot": "copilot", "claude-acp": "claude-code-acp",
            "opencode-acp": "opencode", "codex-acp": "codex-acp"}
MODELS = {"gemini": "gemini-2.5-flash", "copilot": "gpt-4.1", "claude-acp": None,
          "opencode-acp": opencode_offline.MODEL, "codex-acp": "gpt-5.5"}
AGENTS = tuple(PINNED)

_CLAUDE_SWITCHES = {
    "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1",
}


def binary(agent: str) -> str | None:
    """The agent's binary on ``PATH``, if installed."""
    return shutil.which(BINARIES[agent])


def install_hint(agent: str) -> str:
    return f"npm install -g {PACKAGES[agent]}@{PINNED[agent]}"


def offline(agent: str, port: int, home: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """``(env, options)`` for an offline session of ``agent`` (``home`` is created)."""
    home.mkdir(parents=True, exist_ok=True)
    base = f"http://127.0.0.1:{port}"
    options: dict[str, Any] = {"home": str(home)}
    if agent == "gemini":
        settings = home / ".gemini"
        settings.mkdir(exist_ok=True)
        (settings / "settings.json").write_text(json.dumps({
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False}, "ide": {"enabled": False}}))
        env = {"GEMINI_API_KEY": "test-key-gemini", "GOOGLE_GEMINI_BASE_URL": base,
               "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    elif agent == "copilot":
        env = {"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": f"{base}/v1",
               "COPILOT_PROVIDER_API_KEY": "test-key-copilot", "HOME": str(home)}
    elif agent == "opencode-acp":
        env = {**opencode_offline.offline_env(home), "OPENCODE_CONFIG_CONTENT": json.dumps(
            opencode_offline.provider_config(port))}
    elif agent == "codex-acp":
        env = {codex_offline.KEY_ENV: "test-key", "HOME": str(home), "PATH": _codex_path()}
        options["extra_args"] = _codex_config(codex_offline.offline_args(port))
    else:
        env = {**_CLAUDE_SWITCHES, "ANTHROPIC_BASE_URL": base,
               "ANTHROPIC_API_KEY": "sk-ant-test-key", "HOME": str(home)}
    return env, options


def aside(agent: str) -> Any:
    """The fake server's ``aside`` predicate for ``agent``'s helper calls (or ``None``)."""
    if agent == "gemini":
        return lambda r: r.path.endswith(":generateContent")
    if agent == "claude-acp":
        return _claude_aside
    if agent == "opencode-acp":
        return opencode_offline.title_aside
    return None


def _codex_path() -> str:
    """``PATH`` with a ``bwrap`` on it: codex-acp 0.16.0 sandboxes commands with bubblewrap but
    ships none; the Codex CLI's npm package bundles one (``codex-resources/bwrap``)."""
    path = os.environ.get("PATH", os.defpath)
    bundled = Path(codex_offline.NPM_NATIVE).parent.parent / "codex-resources"
    if shutil.which("bwrap") is None and (bundled / "bwrap").exists():
        return f"{bundled}{os.pathsep}{path}"
    return path


def _codex_config(args: list[str]) -> list[str]:
    """Codex's offline switches as ``codex-acp`` takes them: ``-c`` only (``--disable X`` is
    ``-c features.X=false``)."""
    out: list[str] = []
    pairs = iter(args)
    for flag in pairs:
        value = next(pairs)
        out += ["-c", value if flag == "-c" else f"features.{value}=false"]
    return out


def _claude_aside(record: Recorded) -> bool:
    body = record.body
    return isinstance(body, dict) and (not body.get("tools") or body.get("max_tokens") == 1)
