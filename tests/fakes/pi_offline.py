"""Running the real pi CLI offline: which binary, and a config home that keeps it on 127.0.0.1.

``write_home(home, port)`` writes pi's ``models.json`` with one provider, ``fake``, speaking
Chat Completions (``openai-completions``) to the fake model server (``tests.fakes.model_server``)
on ``127.0.0.1:port``, its key read from ``KEY_ENV``; and a ``settings.json`` whose retry delay
is short. ``offline_env`` switches off pi's startup network traffic (version checks, telemetry).
Used by the driver's live tests, the recorder, the daemon end-to-end tests and the benchmark.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

__all__ = ["INSTALL_HINT", "KEY_ENV", "MODEL", "PINNED", "offline_env", "pi_binary", "write_home"]

PINNED = "0.73.1"
"""The pi version ``.ci/run`` installs."""

INSTALL_HINT = f"npm install -g @mariozechner/pi-coding-agent@{PINNED}"

KEY_ENV = "CORRAL_FAKE_PI_KEY"
"""The env var the fake provider takes its API key from (any value works)."""

MODEL = "fake/fake-model"
"""The model, in pi's own ``provider/id`` naming."""


def pi_binary() -> str | None:
    """The ``pi`` executable if installed (``CORRAL_PI_BINARY`` overrides)."""
    explicit = os.environ.get("CORRAL_PI_BINARY")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("pi")


def write_home(home: Path, port: int, *, retry_delay_ms: int = 50) -> None:
    """pi's config directory (``PI_CODING_AGENT_DIR``) pointing at the fake server."""
    home.mkdir(parents=True, exist_ok=True)
    models = {"providers": {"fake": {
        "baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions", "apiKey": KEY_ENV,
        "models": [{"id": "fake-model"}, {"id": "fake-other"}]}}}
    (home / "models.json").write_text(json.dumps(models))
    settings = {"retry": {"enabled": True, "maxRetries": 2, "baseDelayMs": retry_delay_ms,
                          "provider": {"maxRetries": 0}},
                "enableInstallTelemetry": False, "quietStartup": True}
    (home / "settings.json").write_text(json.dumps(settings))


def offline_env(tmp: Path) -> dict[str, str]:
    """The env of an offline pi session (a private HOME under ``tmp``, the fake key)."""
    (tmp / "home").mkdir(parents=True, exist_ok=True)
    return {"HOME": str(tmp / "home"), "PI_OFFLINE": "1", "PI_TELEMETRY": "0",
            "PI_SKIP_VERSION_CHECK": "1", KEY_ENV: "test-key"}
