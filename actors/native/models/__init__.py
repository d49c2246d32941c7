"""Model adapters for the native worker: ``PROVIDER/NAME`` → an ADK ``BaseLlm`` (asyncio).

``resolve_provider`` applies the precedence of session options, config tables and environments;
``build_model`` gives the ADK model; ``ModelError`` is every failure (stable ``native.*`` codes);
``usage_of`` reads a final response's token usage in corral's terms.

The configuration and the errors import no SDK, so they are here at once. Every other name is
imported on first use (module ``__getattr__``): each adapter with its own SDK, so that resolving
a model needs neither ADK nor any SDK, and a worker for ``openai/...`` never imports anthropic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .config import DEFAULT_BASE_URLS as DEFAULT_BASE_URLS
from .config import DEFAULT_KEY_ENVS as DEFAULT_KEY_ENVS
from .config import ProviderConfig as ProviderConfig
from .config import ProviderKind as ProviderKind
from .config import ProviderTable as ProviderTable
from .config import parse_model as parse_model
from .config import resolve_provider as resolve_provider
from .errors import CODES as CODES
from .errors import ModelError as ModelError

if TYPE_CHECKING:
    from .anthropic_messages import AnthropicLlm as AnthropicLlm
    from .factory import CorralLlm as CorralLlm
    from .factory import build_model as build_model
    from .factory import close_model as close_model
    from .gemini import GeminiLlm as GeminiLlm
    from .openai_chat import OpenAIChatLlm as OpenAIChatLlm
    from .openai_responses import OpenAIResponsesLlm as OpenAIResponsesLlm
    from .usage import USAGE_KEY as USAGE_KEY
    from .usage import usage_of as usage_of

_LAZY = {
    "AnthropicLlm": "anthropic_messages",
    "CorralLlm": "factory",
    "GeminiLlm": "gemini",
    "OpenAIChatLlm": "openai_chat",
    "OpenAIResponsesLlm": "openai_responses",
    "USAGE_KEY": "usage",
    "build_model": "factory",
    "close_model": "factory",
    "usage_of": "usage",
}

__all__ = [
    "CODES", "DEFAULT_BASE_URLS", "DEFAULT_KEY_ENVS", "ModelError", "ProviderConfig",
    "ProviderKind", "ProviderTable", "parse_model", "resolve_provider", *sorted(_LAZY),
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once imported, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
