"""The public surface of ``actors.native.models`` is pinned: a change here is one the worker sees."""

from __future__ import annotations

import types

import actors.native.models as models

MODELS = {
    "AnthropicLlm", "CODES", "CorralLlm", "DEFAULT_BASE_URLS", "DEFAULT_KEY_ENVS", "GeminiLlm",
    "ModelError", "OpenAIChatLlm", "OpenAIResponsesLlm", "ProviderConfig", "ProviderKind",
    "ProviderTable", "USAGE_KEY", "build_model", "close_model", "parse_model", "resolve_provider",
    "usage_of",
}


def test_models_exports() -> None:
    public = {n for n, v in vars(models).items()
              if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert public == MODELS


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
