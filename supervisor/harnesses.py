"""Which harness drivers the daemon offers (wiring: the one place that names every driver)."""

from __future__ import annotations

from typing import Any

from actors.fake import FakeDriver

from .config import Config


def drivers(config: Config) -> dict[str, Any]:
    """Every harness by name; ``[harness.<name>]`` tables configure the vendor drivers."""
    found: dict[str, Any] = {"fake": FakeDriver()}
    return found
