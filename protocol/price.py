"""A model's price per million tokens, apart from the worker protocol: the usage summary and
the native driver both read the price table, and an idle daemon loads it without
``protocol.native``."""

from __future__ import annotations

import msgspec

__all__ = ["Price"]


class Price(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """US dollars per million tokens of each kind (``config/prices.toml``)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
