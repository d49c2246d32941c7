"""Turn accounting: Codex's cumulative token totals, rate-limit windows and turn errors as events.

``thread/tokenUsage/updated`` carries the thread's running totals; a turn's usage is their growth
during the turn. OpenAI counts cached input inside ``input_tokens``, so ``input_tokens`` here is
the uncached part and ``cache_read_tokens`` the cached one (as Anthropic reports them).
"""

from __future__ import annotations

from actors.vendors.errors import Classification
from protocol.base import format_ts
from protocol.events import LimitWindow, Usage

from . import messages as m
from .errors import classify


def turn_error(error: m.TurnError) -> Classification:
    """Classify a ``TurnError`` (message, details and ``codexErrorInfo``)."""
    text = error.message
    if error.additional_details:
        text = f"{text} ({error.additional_details})"
    return classify(text, info=error.codex_error_info)


def turn_usage(total: m.Tokens, base: m.Tokens) -> Usage:
    """The growth of the thread's cumulative totals since ``base`` (cached input split out)."""
    cached = total.cached_input_tokens - base.cached_input_tokens
    return Usage(
        input_tokens=max(0, total.input_tokens - base.input_tokens - cached),
        output_tokens=max(0, total.output_tokens - base.output_tokens),
        cache_read_tokens=max(0, cached),
        cache_write_tokens=max(0, total.cache_write_input_tokens - base.cache_write_input_tokens))


_WINDOW_NAMES = {300: "five_hour", 1440: "daily", 10080: "weekly", 43200: "monthly"}


def limit_window(window: m.RateLimitWindow, fallback: str) -> LimitWindow:
    """A rate-limit window named by its length (``five_hour``, ``weekly``, …) or its slot."""
    name = _WINDOW_NAMES.get(window.window_duration_mins or 0, fallback)
    resets = format_ts(window.resets_at) if window.resets_at is not None else None
    return LimitWindow(name=name, used_percent=window.used_percent, resets_at=resets)
