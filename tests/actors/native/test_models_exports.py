"""The public surface of ``actors.native.models`` is pinned: a change here is one the worker sees."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import actors.native.models as models

MODELS = {
    "AnthropicLlm", "CODES", "CorralLlm", "GeminiLlm", "ModelError", "OpenAIChatLlm",
    "OpenAIResponsesLlm", "ProviderConfig", "ProviderKind", "USAGE_KEY", "build_model",
    "close_model", "usage_of",
}


def test_models_exports() -> None:
    assert set(models.__all__) == MODELS
    assert MODELS <= set(dir(models))
    for name in MODELS:  # the lazy ones too
        assert getattr(models, name) is not None, name


def test_adapters_and_their_sdks_are_imported_per_provider() -> None:
    # A fresh interpreter: this one has imported everything already.
    script = textwrap.dedent("""
        import sys
        from actors.native.models import ProviderConfig
        from actors.native.providers import resolve
        def loaded():
            return sorted(m for m in ("openai", "anthropic", "google.adk", "google.genai")
                          if m in sys.modules)
        resolve("openai/gpt-5-mini", providers={}, session_base_url=None,
                session_env={}, daemon_env={})
        print(loaded())
        from actors.native.models import build_model
        build_model(ProviderConfig(kind="openai", provider="openai", model="m",
                                   base_url="http://127.0.0.1:9/v1"))
        print(loaded())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=120).stdout.splitlines()
    assert out == ["[]", "['google.adk', 'google.genai', 'openai']"]


def test_no_trio_in_the_asyncio_worker_code() -> None:
    import ast
    from pathlib import Path

    for path in Path(models.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                 for a in n.names}
        names |= {n.module.split(".")[0] for n in ast.walk(tree)
                  if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
        assert "trio" not in names, path
