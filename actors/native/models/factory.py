"""From a resolved ``ProviderConfig`` to the ADK model object the agent calls.

The worker does, per session (and again on ``session.set_model``)::

    config = msgspec.convert(msgspec.structs.asdict(start.provider), ProviderConfig)
    llm = build_model(config)             # an ADK BaseLlm: LlmAgent(model=llm, ...)
    ...
    await close_model(llm)                # when the worker shuts down or switches models

Errors from a model call are ``ModelError`` (``errors``); usage is ``usage_of(final_response)``.
Each adapter module is imported when a model of its kind is first built, so a worker imports
only the SDK it uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .config import ProviderConfig

if TYPE_CHECKING:
    from google.adk.models.base_llm import BaseLlm

    from .anthropic_messages import AnthropicLlm
    from .gemini import GeminiLlm
    from .openai_chat import OpenAIChatLlm
    from .openai_responses import OpenAIResponsesLlm

    CorralLlm = OpenAIResponsesLlm | OpenAIChatLlm | AnthropicLlm | GeminiLlm
    """Every model ``build_model`` returns (each has ``provider`` and ``aclose()``); at run
    time the union is built on first use, which imports every adapter."""

__all__ = ["CorralLlm", "build_model", "close_model"]


def build_model(config: ProviderConfig) -> CorralLlm:
    """The ADK model for ``config``; builds no connection until the first call."""
    match config.kind:
        case "openai":
            from .openai_responses import OpenAIResponsesLlm

            return OpenAIResponsesLlm(model=config.model, provider=config)
        case "openai-chat":
            from .openai_chat import OpenAIChatLlm

            return OpenAIChatLlm(model=config.model, provider=config)
        case "anthropic":
            from .anthropic_messages import AnthropicLlm

            return AnthropicLlm(model=config.model, provider=config)
        case "gemini":
            from .gemini import gemini_model

            return gemini_model(config)


async def close_model(llm: BaseLlm) -> None:
    """Close the connections ``llm`` holds in the running loop (any other model: nothing)."""
    if isinstance(llm, _Closable) and isinstance(getattr(llm, "provider", None), ProviderConfig):
        await llm.aclose()


@runtime_checkable
class _Closable(Protocol):
    async def aclose(self) -> None: ...


def __getattr__(name: str) -> Any:
    if name != "CorralLlm":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .anthropic_messages import AnthropicLlm
    from .gemini import GeminiLlm
    from .openai_chat import OpenAIChatLlm
    from .openai_responses import OpenAIResponsesLlm

    return OpenAIResponsesLlm | OpenAIChatLlm | AnthropicLlm | GeminiLlm
