"""Prices of model tokens: which table entry a model name uses, and what its tokens cost.

One place for the rule, used by the native worker (the ``cost_usd`` of its turns) and by the
usage summary (the estimated cost of turns whose harness reported none). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from protocol.events import Usage
from protocol.price import Price

__all__ = ["call_cost", "model_name", "price_for"]


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of ``model`` (a NAME, without provider): an exact entry, else the longest entry
    that ``model`` starts with followed by ``-`` (a dated version), else ``None``."""
    if model in prices:
        return prices[model]
    matches = [name for name in prices if model.startswith(name + "-")]
    return prices[max(matches, key=len)] if matches else None


def call_cost(usage: Usage, price: Price) -> float:
    """US dollars for one call's ``usage`` at ``price`` (cached input billed as input when the
    price has no cache rate)."""
    read = price.input if price.cache_read is None else price.cache_read
    write = price.input if price.cache_write is None else price.cache_write
    return (usage.input_tokens * price.input + usage.output_tokens * price.output
            + usage.cache_read_tokens * read + usage.cache_write_tokens * write) / 1_000_000


def model_name(model: str) -> str:
    """The NAME the price table is keyed by: ``openai/gpt-5-mini`` → ``gpt-5-mini`` (harnesses
    that name a provider put it before the last ``/``)."""
    return model.rsplit("/", 1)[-1]
