"""From a resolved ``ProviderConfig`` to the ADK model object the agent calls.

The worker does, per session (and again on ``session.set_model``)::

    config = resolve_provider("openai/gpt-5-mini", providers=tables,
                              session_base_url=options.base_url, session_env=options.env,
                              daemon_env=os.environ)
    llm = build_model(config)             # an ADK BaseLlm: LlmAgent(model=llm, ...)
    ...
    await close_model(llm)                # when the worker shuts down or switches models

Errors from a model call are ``ModelError`` (``errors``); usage is ``usage_of(final_response)``.
"""

from __future__ import annotations

from google.adk.models.base_llm import BaseLlm

from .anthropic_messages import AnthropicLlm
from .config import ProviderConfig
from .gemini import GeminiLlm, gemini_model
from .openai_chat import OpenAIChatLlm
from .openai_responses import OpenAIResponsesLlm

__all__ = ["CorralLlm", "build_model", "close_model"]

CorralLlm = OpenAIResponsesLlm | OpenAIChatLlm | AnthropicLlm | GeminiLlm
"""Every model ``build_model`` returns (each has ``provider`` and ``aclose()``)."""


def build_model(config: ProviderConfig) -> CorralLlm:
    """The ADK model for ``config``; builds no connection until the first call."""
    match config.kind:
        case "openai":
            return OpenAIResponsesLlm(model=config.model, provider=config)
        case "openai-chat":
            return OpenAIChatLlm(model=config.model, provider=config)
        case "anthropic":
            return AnthropicLlm(model=config.model, provider=config)
        case "gemini":
            return gemini_model(config)


async def close_model(llm: BaseLlm) -> None:
    """Close the connections ``llm`` holds in the running loop (any other model: nothing)."""
    if isinstance(llm, (OpenAIResponsesLlm, OpenAIChatLlm, AnthropicLlm, GeminiLlm)):
        await llm.aclose()
