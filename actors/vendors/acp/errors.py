"""Classify ACP agent failures into an error class and a stable ``<harness>.<class>.<name>`` code.

Input is error-shaped only: a JSON-RPC error answering one of our requests (its ``code``,
``message`` and ``data``; Gemini puts the upstream HTTP status in ``code``), never assistant
prose. The HTTP status wins, then ACP's own codes, then patterns in the text.

================================  ============  ================================================
name                              class         when
================================  ============  ================================================
``auth.required``                 auth          ACP ``-32000`` "Authentication required", 401
``auth.forbidden``                auth          403
``limit.rate_limited``            limit         429, "rate limit", "quota exceeded"
``entitlement.model``             entitlement   404 or "model … not found"
``overloaded.server``             overloaded    503/529, "overloaded"
``overloaded.server_error``       overloaded    other 5xx
``protocol.bad_request``          protocol      400, ``-32602`` invalid params
``protocol.rpc_error``            protocol      any other JSON-RPC error
``protocol.resume_failed``        protocol      ``session/load``/``session/resume`` failed
================================  ============  ================================================

Messages are redacted (API-key-shaped tokens masked: ``actors.redaction``) and capped.
"""

from __future__ import annotations

import re
from typing import Any

from actors.redaction import redact
from protocol.events import Error, ErrorClass

__all__ = ["classify"]

AUTH_REQUIRED = -32000
INVALID_PARAMS = -32602


def classify(harness: str, method: str, code: int, message: str, data: Any = None) -> Error:
    """The ``error`` event for a JSON-RPC error that answered our ``method``."""
    detail = message
    if isinstance(data, dict) and isinstance(data.get("details"), str):
        detail = f"{message}: {data['details']}"
    elif isinstance(data, str):
        detail = f"{message}: {data}"
    text = redact(detail)[:2000]
    error_class, name = _name(code, text)
    return Error(code=f"{harness}.{error_class}.{name}", error_class=error_class,
                 message=f"{method} failed ({code}): {text}")




_PATTERNS: tuple[tuple[str, ErrorClass, str], ...] = (
    (r"authentication required|not logged in|unauthenticated|invalid api key", "auth", "required"),
    (r"rate[_ ]limit|too many requests|quota exceeded|resource_exhausted", "limit", "rate_limited"),
    (r"model[^.]*(?:not found|does not exist)", "entitlement", "model"),
    (r"overloaded|unavailable", "overloaded", "server"),
)
_TEXT = tuple((re.compile(p, re.IGNORECASE), c, n) for p, c, n in _PATTERNS)


def _name(code: int, text: str) -> tuple[ErrorClass, str]:
    match code:
        case 401:
            return "auth", "required"
        case 403:
            return "auth", "forbidden"
        case 429:
            return "limit", "rate_limited"
        case 404:
            return "entitlement", "model"
        case 503 | 529:
            return "overloaded", "server"
        case int() if 500 <= code < 600:
            return "overloaded", "server_error"
        case 400 | -32602:
            return "protocol", "bad_request"
        case -32000:
            return "auth", "required"
    for pattern, error_class, name in _TEXT:
        if pattern.search(text):
            return error_class, name
    return "protocol", "rpc_error"
