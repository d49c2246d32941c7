"""Model adapters for the native worker: ``PROVIDER/NAME`` → an ADK ``BaseLlm`` (asyncio).

``ProviderConfig`` is what an adapter is given (``actors.native.providers.resolve`` resolves a
model's ``ProviderSettings``, which the worker converts); ``build_model`` gives the ADK model; ``ModelError`` is every failure (stable ``native.*`` codes);
``usage_of`` reads a final response's token usage in corral's terms.

The configuration and the errors import no SDK, so they are here at once. Every other name is
imported on first use (module ``__getattr__``): each adapter with its own SDK, so that resolving
the configuration needs neither ADK nor any SDK, and a worker for ``openai/...`` never imports anthropic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from protocol.native import ProviderKind as ProviderKind

from .config import ProviderConfig as ProviderConfig
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
    "CODES", "ModelError", "ProviderConfig", "ProviderKind", *sorted(_LAZY),
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
