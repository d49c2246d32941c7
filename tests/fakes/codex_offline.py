"""Running the real Codex CLI offline: which binary, and the switches that keep it on 127.0.0.1.

``offline_args(port)`` points Codex's model provider at the fake OpenAI server
(``tests.fakes.openai_server``) on ``127.0.0.1:port`` and switches off its other traffic
(analytics, OpenTelemetry, update checks, plugins, apps); the provider reads its key from
``KEY_ENV``. Used by the driver's live tests, the daemon end-to-end tests and the benchmark.
"""

from __future__ import annotations

import os
from pathlib import Path

from actors.vendors.codex.detect import find_binary

KEY_ENV = "CORRAL_FAKE_OPENAI_KEY"
"""The env var the fake provider takes its API key from (any value works)."""

PINNED = "0.171.0"
"""The Codex version ``.ci/run`` installs."""

INSTALL_HINT = f"npm install -g @openai/codex@{PINNED}"

NPM_NATIVE = ("/usr/lib/node_modules/@openai/codex/node_modules/@openai/codex-linux-x64/vendor/"
              "x86_64-unknown-linux-musl/bin/codex")


def codex_binary() -> str | None:
    """The native Codex binary if installed (``CORRAL_CODEX_BINARY`` overrides)."""
    explicit = os.environ.get("CORRAL_CODEX_BINARY")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return find_binary(None, os.environ.get("PATH")) or (
        NPM_NATIVE if os.access(NPM_NATIVE, os.X_OK) else None)


def offline_args(port: int) -> list[str]:
    """Point Codex at the fake server and switch its other traffic off."""
    provider = "model_providers.fake"
    return [
        "-c", f'{provider}.name="fake"',
        "-c", f'{provider}.base_url="http://127.0.0.1:{port}/v1"',
        "-c", f'{provider}.wire_api="responses"',
        "-c", f'{provider}.env_key="{KEY_ENV}"',
        "-c", f"{provider}.request_max_retries=0",
        "-c", f"{provider}.stream_max_retries=0",
        "-c", 'model_provider="fake"',
        "-c", "analytics.enabled=false",
        "-c", 'otel.metrics_exporter="none"',
        "-c", "check_for_update_on_startup=false",
        "--disable", "plugins", "--disable", "remote_plugin", "--disable", "apps",
    ]


def offline_env(codex_home: Path) -> dict[str, str]:
    """Env for a Codex child whose ``CODEX_HOME`` is ``codex_home`` under a test's tmp dir.

    With a system ``bwrap`` on PATH, Codex runs sandboxed commands as ``bwrap ...
    codex-linux-sandbox``, an alias it writes into ``CODEX_HOME`` -- and it refuses to write one
    anywhere under the temp dir, so every command would fail with ``execvp codex-linux-sandbox``.
    A ``TMPDIR`` beside ``codex_home`` takes the home out from under the temp dir.
    """
    tmpdir = codex_home.parent / "codex_tmp"
    tmpdir.mkdir(exist_ok=True)
    return {"TMPDIR": str(tmpdir)}
