"""Classify OpenCode's failures into an error class and a stable ``opencode.<class>.<name>`` code.

OpenCode names its errors (``session.error`` and an assistant message's ``error``:
``ProviderAuthError``, ``APIError``, ``ContextOverflowError``, …) and puts the provider's text in
``data.message``; HTTP calls to the server answer a status. The name wins, then the status,
then patterns in the text.

Codes (stable; never rename one):

====================================  ============  ==========================================
code                                  class         when
====================================  ============  ==========================================
``opencode.auth.provider``            auth          ``ProviderAuthError``, 401/403, "api key"
``opencode.limit.rate_limited``       limit         429, "rate limit"
``opencode.entitlement.quota``        entitlement   "insufficient_quota", "billing"
``opencode.entitlement.model``        entitlement   "model not found", ``ProviderModelNotFound``
``opencode.overloaded.server``        overloaded    503/529, "overloaded"
``opencode.overloaded.server_error``  overloaded    500/502/504
``opencode.unknown.context_window``   unknown       ``ContextOverflowError``, "context length"
``opencode.unknown.output_length``    unknown       ``MessageOutputLengthError``
``opencode.protocol.bad_request``     protocol      400 or 404 from the server
``opencode.protocol.resume_failed``   protocol      the session to resume is gone (a new one follows)
``opencode.protocol.server_gone``     protocol      the shared server died under the session
``opencode.unknown.error``            unknown       anything else
====================================  ============  ==========================================
"""

from __future__ import annotations

import re

from actors.redaction import redact
from actors.vendors.errors import Classification
from protocol.events import ErrorClass

__all__ = ["classify"]


def classify(message: str, *, name: str | None = None, status: int | None = None) -> Classification:
    """Classify one failure from its text, OpenCode error name and HTTP status."""
    text = redact(message)
    key = _NAMES.get(name or "") or _status(status) or next(
        (k for pattern, k in _TEXT if pattern.search(text)), "error")
    error_class, code = _CODES[key]
    return Classification(error_class=error_class, code=code, message=text)




_CODES: dict[str, tuple[ErrorClass, str]] = {
    "auth": ("auth", "opencode.auth.provider"),
    "rate": ("limit", "opencode.limit.rate_limited"),
    "quota": ("entitlement", "opencode.entitlement.quota"),
    "model": ("entitlement", "opencode.entitlement.model"),
    "overloaded": ("overloaded", "opencode.overloaded.server"),
    "server_error": ("overloaded", "opencode.overloaded.server_error"),
    "context": ("unknown", "opencode.unknown.context_window"),
    "length": ("unknown", "opencode.unknown.output_length"),
    "bad_request": ("protocol", "opencode.protocol.bad_request"),
    "error": ("unknown", "opencode.unknown.error"),
}
_NAMES = {"ProviderAuthError": "auth", "ContextOverflowError": "context",
          "MessageOutputLengthError": "length", "ProviderModelNotFoundError": "model"}
_TEXT = tuple((re.compile(p, re.IGNORECASE), k) for p, k in (
    (r"insufficient_quota|exceeded your current quota|billing", "quota"),
    (r"\b401\b|\b403\b|api key|unauthorized", "auth"),
    (r"\b429\b|rate[_ ]?limit|too many requests", "rate"),
    (r"model[^.]*not found", "model"),
    (r"\b503\b|\b529\b|overloaded", "overloaded"),
    (r"\b500\b|\b502\b|\b504\b|internal server error", "server_error"),
    (r"context (?:length|window)", "context"),
))


def _status(status: int | None) -> str | None:
    match status:
        case 401 | 403:
            return "auth"
        case 429:
            return "rate"
        case 400 | 404:
            return "bad_request"
        case 503 | 529:
            return "overloaded"
        case int() if 500 <= status < 600:
            return "server_error"
    return None
