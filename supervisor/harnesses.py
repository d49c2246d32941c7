"""Which harness drivers the daemon offers (wiring: the one place that names every driver)."""

from __future__ import annotations

import os.path
from typing import Any

from actors.fake import FakeDriver
from actors.vendors.claude import ClaudeDriver
from actors.vendors.codex import CodexDriver

from .config import Config, HarnessConfig


def drivers(config: Config) -> dict[str, Any]:
    """Every harness by name; ``[harness.<name>]`` tables configure the vendor drivers."""
    claude = config.harness.get("claude", HarnessConfig())
    codex = config.harness.get("codex", HarnessConfig())
    found: dict[str, Any] = {
        "fake": FakeDriver(),
        "claude": ClaudeDriver(binary=_expand(claude.binary)),
        "codex": CodexDriver(binary=_expand(codex.binary)),
    }
    return found


def _expand(path: str | None) -> str | None:
    return os.path.expanduser(path) if path else None
