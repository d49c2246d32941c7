"""A turn's usage and cost, summed over its model calls (pure: no ADK, no I/O).

Usage follows corral's convention (``input_tokens`` without cached tokens; cache reads and
writes apart). Cost is per model call, because ``set_model`` may change the model between two
calls of one turn: a call whose model has no price makes the whole turn's ``cost_usd`` null
(a partial sum would look like a real figure).
"""

from __future__ import annotations

from collections.abc import Mapping

from actors.usage.pricing import call_cost, price_for
from protocol.events import Usage
from protocol.native import Price

__all__ = ["TurnAccount", "call_cost", "price_for"]
"""``price_for`` and ``call_cost`` live in ``actors.usage.pricing`` (shared with the usage summary)."""


class TurnAccount:
    """Sums the usage and cost of one turn's model calls."""

    def __init__(self, prices: Mapping[str, Price]) -> None:
        self._prices = prices
        self.usage = Usage()
        self._cost: float | None = 0.0
        self.calls = 0

    def add(self, model: str, usage: Usage) -> None:
        """Count one model call of ``model`` (a NAME) that reported ``usage``."""
        self.calls += 1
        total = self.usage
        self.usage = Usage(input_tokens=total.input_tokens + usage.input_tokens,
                           output_tokens=total.output_tokens + usage.output_tokens,
                           cache_read_tokens=total.cache_read_tokens + usage.cache_read_tokens,
                           cache_write_tokens=total.cache_write_tokens + usage.cache_write_tokens)
        price = price_for(model, self._prices)
        if price is None or self._cost is None:
            self._cost = None
        else:
            self._cost += call_cost(usage, price)

    @property
    def cost_usd(self) -> float | None:
        """The turn's cost, or ``None`` when a call's model has no price (or nothing was called)."""
        if self.calls == 0 or self._cost is None:
            return None
        return round(self._cost, 8)
