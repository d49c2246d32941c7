"""Token usage of a model response, the way corral reports it, for every provider.

The four APIs count differently: OpenAI and Gemini include cached tokens in the prompt total,
Anthropic reports cache reads and cache writes beside ``input_tokens``, and only Anthropic has
cache writes. A final ``LlmResponse`` from our adapters carries both forms:

* ``usage_metadata`` in Gemini's convention (``prompt_token_count`` includes cached tokens,
  ``thoughts_token_count`` apart from ``candidates_token_count``), so ADK and its plugins read
  it as they read Gemini's;
* ``custom_metadata["corral_usage"]``: corral's ``Usage`` fields exactly (``input_tokens``
  without cached ones, ``cache_read_tokens`` and ``cache_write_tokens`` apart).

``usage_of(response)`` gives the ``Usage`` of any final response, ours or ADK's own Gemini
model's (from its ``usage_metadata``, with no cache writes), or ``None`` if it reports none.
"""

from __future__ import annotations

from typing import Any

from google.adk.models.llm_response import LlmResponse
from google.genai import types

from protocol.events import Usage

__all__ = ["USAGE_KEY", "usage_fields", "usage_of"]

USAGE_KEY = "corral_usage"
"""The ``custom_metadata`` key of corral's usage figures."""


def usage_fields(usage: Usage, *, reasoning_tokens: int = 0) -> dict[str, Any]:
    """``LlmResponse`` keyword arguments that carry ``usage`` in both forms."""
    prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    reasoning = min(reasoning_tokens, usage.output_tokens)
    metadata = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt,
        cached_content_token_count=usage.cache_read_tokens or None,
        candidates_token_count=usage.output_tokens - reasoning,
        thoughts_token_count=reasoning or None,
        total_token_count=prompt + usage.output_tokens,
    )
    figures = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
               "cache_read_tokens": usage.cache_read_tokens,
               "cache_write_tokens": usage.cache_write_tokens}
    return {"usage_metadata": metadata, "custom_metadata": {USAGE_KEY: figures}}


def usage_of(response: LlmResponse) -> Usage | None:
    """The usage a (final) response reports, in corral's terms; ``None`` when it has none."""
    ours = (response.custom_metadata or {}).get(USAGE_KEY)
    if isinstance(ours, dict):
        return Usage(**{k: int(ours.get(k, 0)) for k in
                        ("input_tokens", "output_tokens", "cache_read_tokens",
                         "cache_write_tokens")})
    meta = response.usage_metadata
    if meta is None:
        return None
    cached = meta.cached_content_token_count or 0
    return Usage(
        input_tokens=max((meta.prompt_token_count or 0) - cached, 0),
        output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        cache_read_tokens=cached,
    )
