"""Classify pi's failures into an error class and a stable ``pi.<class>.<name>`` code.

pi reports a failed model call as an assistant message with ``stopReason: "error"`` and an
``errorMessage`` (the provider's status and body as text), and a refused command as a
``success: false`` response with ``error``. Both are error-shaped text; the first pattern that
matches wins.

Codes (stable; never rename one):

===============================  ============  =============================================
code                             class         when
===============================  ============  =============================================
``pi.auth.invalid_key``          auth          401, "invalid api key", "unauthorized"
``pi.auth.not_logged_in``        auth          "no api key found", "/login", "re-authenticate"
``pi.limit.rate_limited``        limit         429, "rate limit", "too many requests"
``pi.entitlement.quota``         entitlement   "insufficient_quota", "billing", "credit"
``pi.entitlement.model``         entitlement   "model not found", "no model selected"
``pi.overloaded.server``         overloaded    503/529, "overloaded"
``pi.overloaded.server_error``   overloaded    500/502/504, "internal server error"
``pi.unknown.context_window``    unknown       "context length", "context window", "too long"
``pi.unknown.connection``        unknown       "fetch failed", "connection refused", "ECONNREFUSED"
``pi.protocol.command_failed``   protocol      a command of ours was refused (other text)
``pi.protocol.extension_error``  protocol      an extension threw (``extension_error``)
``pi.unknown.error``             unknown       anything else
===============================  ============  =============================================

Messages are redacted: anything shaped like an API key is masked (``actors.redaction``).
"""

from __future__ import annotations

import re

from actors.redaction import redact
from actors.vendors.errors import Classification
from protocol.events import ErrorClass

__all__ = ["classify", "command_failed"]


def classify(message: str) -> Classification:
    """Classify one error-shaped text from pi (an ``errorMessage`` or a refusal)."""
    text = redact(message)
    for pattern, error_class, code in _PATTERNS:
        if pattern.search(text):
            return Classification(error_class=error_class, code=code, message=text)
    return Classification(error_class="unknown", code="pi.unknown.error", message=text)


def command_failed(command: str, error: str | None) -> Classification:
    """A ``success: false`` answer to our ``command``: by its text if that says more."""
    found = classify(error or "")
    if found.code != "pi.unknown.error":
        return found
    return Classification(error_class="protocol", code="pi.protocol.command_failed",
                          message=f"pi refused {command}: {redact(error or 'no reason given')}")




_RULES: tuple[tuple[str, ErrorClass, str], ...] = (
    (r"insufficient_quota|exceeded your current quota|billing|credit balance", "entitlement",
     "pi.entitlement.quota"),
    (r"no api key found|/login|re-authenticate|not logged in", "auth", "pi.auth.not_logged_in"),
    (r"\b401\b|invalid[_ ]api[_ ]key|incorrect api key|unauthorized|authentication",
     "auth", "pi.auth.invalid_key"),
    (r"\b429\b|rate[_ ]?limit|too many requests", "limit", "pi.limit.rate_limited"),
    (r"model[^.]*not found|no model selected|model_not_found|unknown model", "entitlement",
     "pi.entitlement.model"),
    (r"\b503\b|\b529\b|overloaded|service unavailable", "overloaded", "pi.overloaded.server"),
    (r"\b500\b|\b502\b|\b504\b|internal server error|server[_ ]error", "overloaded",
     "pi.overloaded.server_error"),
    (r"context (?:length|window)|too long|context_length_exceeded", "unknown",
     "pi.unknown.context_window"),
    (r"fetch failed|connection (?:refused|error|lost)|econnrefused|socket hang up",
     "unknown", "pi.unknown.connection"),
)

_PATTERNS = tuple((re.compile(pattern, re.IGNORECASE), error_class, code)
                  for pattern, error_class, code in _RULES)
