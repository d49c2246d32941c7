"""The fixture-pinned token estimator and its EWMA calibration (plasmid's "Deterministic
compaction"). Pure: JSON-shaped data in, integers out.

A request is measured as plain JSON data (a genai ``Content`` dumped with
``model_dump(mode="json", exclude_none=True)``; the worker does the dumping):

* each item (a content, the system instruction, a function declaration) is written as
  **canonical JSON** — object keys sorted, no whitespace, non-ASCII written as itself (no
  ``\\u`` escapes, no HTML escaping) — and charged one token per four UTF-8 bytes, rounded up,
  per item (so the estimate of a request is the sum of its items' and a planner can add and
  subtract them);
* then the framing allowances: 4 tokens per content, 1 per part, 8 per function call or
  response, 16 per binary payload (``inline_data`` or ``file_data``), 12 per function
  declaration. The system instruction is charged as one content with one part.

These are deterministic allowances, not claims about any provider's tokenizer; the
``Calibration`` factor (an EWMA of reported prompt tokens over the raw estimate, alpha 0.3,
clamped to 0.5–2.0) scales them towards what the provider actually counts.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = [
    "ALPHA", "FACTOR_MAX", "FACTOR_MIN", "Calibration", "canonical_json", "content_tokens",
    "declaration_tokens", "json_tokens", "system_tokens",
]

CONTENT_ALLOWANCE = 4
PART_ALLOWANCE = 1
FUNCTION_ALLOWANCE = 8
BINARY_ALLOWANCE = 16
DECLARATION_ALLOWANCE = 12

ALPHA = 0.3
FACTOR_MIN = 0.5
FACTOR_MAX = 2.0


def canonical_json(value: Any) -> bytes:
    """``value`` as canonical JSON, UTF-8 (sorted keys, compact, no escaping of non-ASCII)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode()


def json_tokens(value: Any) -> int:
    """One token per four UTF-8 bytes of ``value``'s canonical JSON, rounded up."""
    return math.ceil(len(canonical_json(value)) / 4)


def content_tokens(content: dict[str, Any]) -> int:
    """The raw estimate of one content (see the module docstring)."""
    parts = content.get("parts") or []
    total = json_tokens(content) + CONTENT_ALLOWANCE + PART_ALLOWANCE * len(parts)
    for part in parts:
        if part.get("function_call") is not None or part.get("function_response") is not None:
            total += FUNCTION_ALLOWANCE
        if part.get("inline_data") is not None or part.get("file_data") is not None:
            total += BINARY_ALLOWANCE
    return total


def system_tokens(text: str) -> int:
    """The raw estimate of a system instruction (one content of one part); 0 when empty."""
    if not text:
        return 0
    return json_tokens(text) + CONTENT_ALLOWANCE + PART_ALLOWANCE


def declaration_tokens(declaration: dict[str, Any]) -> int:
    """The raw estimate of one function declaration."""
    return json_tokens(declaration) + DECLARATION_ALLOWANCE


class Calibration:
    """The factor that turns raw estimates into the provider's prompt tokens (EWMA)."""

    def __init__(self, factor: float = 1.0) -> None:
        self.factor = _clamp(factor)

    def scale(self, raw: int) -> int:
        """``raw`` calibrated, rounded up."""
        return math.ceil(raw * self.factor)

    def observe(self, raw: int, reported: int) -> float:
        """Fold one request's reported prompt tokens in; a request without both counts is
        ignored. Returns the new factor."""
        if raw > 0 and reported > 0:
            self.factor = _clamp((1 - ALPHA) * self.factor + ALPHA * (reported / raw))
        return self.factor


def _clamp(factor: float) -> float:
    if not math.isfinite(factor):
        return 1.0
    return min(FACTOR_MAX, max(FACTOR_MIN, factor))
