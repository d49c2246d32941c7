"""Classify Codex failures into an error class and a stable ``codex.<class>.<name>`` code.

Input must be error-shaped (a ``TurnError``, a JSON-RPC error, an HTTP status, a stderr tail):
free assistant prose quotes words such as "quota" or "unauthorized" in ordinary text. The most
precise signal wins: Codex's own ``codexErrorInfo`` first, then an HTTP status (Codex forwards
the upstream status inside the tagged infos), then patterns in the message text.

Codes (stable; never rename one):

==================================  ============  =============================================
code                                class         when
==================================  ============  =============================================
``codex.auth.invalid_key``          auth          401, ``unauthorized``, "incorrect API key"
``codex.auth.forbidden``            auth          403
``codex.auth.not_logged_in``        auth          "not logged in", "login required"
``codex.limit.rate_limited``        limit         429, ``rateLimitExceeded``, "rate limit"
``codex.limit.usage_limit``         limit         ``usageLimitExceeded``, budget exceeded
``codex.entitlement.quota``         entitlement   ``insufficient_quota``, "billing"
``codex.entitlement.model``         entitlement   ``modelNotFound``, "model … does not exist"
``codex.entitlement.policy``        entitlement   a usage-policy block (cyber, bio, misalignment)
``codex.overloaded.server``         overloaded    503/529, ``serverOverloaded``, "overloaded"
``codex.overloaded.server_error``   overloaded    500/502/504, ``internalServerError``
``codex.protocol.bad_request``      protocol      400, ``badRequest``
``codex.protocol.not_steerable``    protocol      ``activeTurnNotSteerable``
``codex.protocol.rpc_error``        protocol      a JSON-RPC error answering one of our requests
``codex.protocol.resume_failed``    protocol      ``thread/resume`` failed (a new thread follows)
``codex.unknown.context_window``    unknown       ``contextWindowExceeded``
``codex.unknown.connection``        unknown       the model endpoint could not be reached
``codex.unknown.sandbox``           unknown       ``sandboxError``
``codex.unknown.error``             unknown       anything else
==================================  ============  =============================================

Messages are redacted: anything shaped like an API key is masked (``actors.redaction``).
"""

from __future__ import annotations

import re
from typing import Any

from actors.redaction import redact
from actors.vendors.errors import Classification
from protocol.events import ErrorClass


def classify(message: str, *, status: int | None = None, info: Any = None) -> Classification:
    """Classify one error from its text, optional HTTP status and optional ``codexErrorInfo``."""
    text = redact(message)
    name, info_status, connection = _info(info)
    by_text = _text_name(text)
    by_status = _status_name(status if status is not None else info_status)
    if by_text == "quota" and name in (None, "usage_limit", "rate_limited"):
        # Codex reports OpenAI's insufficient_quota (a 429) as a usage limit; it is billing.
        name = by_status = None
    for key in (name, by_status, by_text):
        if key is not None:
            error_class, code = _CODES[key]
            return Classification(error_class=error_class, code=code, message=text)
    if connection:
        return Classification(error_class="unknown", code="codex.unknown.connection", message=text)
    return Classification(error_class="unknown", code="codex.unknown.error", message=text)


def rpc_error(method: str, code: int, message: str) -> Classification:
    """A JSON-RPC error answering our ``method``: by its text if that says more, else protocol."""
    found = classify(message)
    if found.code != "codex.unknown.error":
        return found
    return Classification(error_class="protocol", code="codex.protocol.rpc_error",
                          message=f"{method} failed ({code}): {redact(message)}")




_CODES: dict[str, tuple[ErrorClass, str]] = {
    "invalid_key": ("auth", "codex.auth.invalid_key"),
    "forbidden": ("auth", "codex.auth.forbidden"),
    "not_logged_in": ("auth", "codex.auth.not_logged_in"),
    "rate_limited": ("limit", "codex.limit.rate_limited"),
    "usage_limit": ("limit", "codex.limit.usage_limit"),
    "quota": ("entitlement", "codex.entitlement.quota"),
    "model": ("entitlement", "codex.entitlement.model"),
    "policy": ("entitlement", "codex.entitlement.policy"),
    "overloaded": ("overloaded", "codex.overloaded.server"),
    "server_error": ("overloaded", "codex.overloaded.server_error"),
    "bad_request": ("protocol", "codex.protocol.bad_request"),
    "not_steerable": ("protocol", "codex.protocol.not_steerable"),
    "context_window": ("unknown", "codex.unknown.context_window"),
    "sandbox": ("unknown", "codex.unknown.sandbox"),
}

_INFOS: dict[str, str] = {
    "unauthorized": "invalid_key",
    "rateLimitExceeded": "rate_limited",
    "usageLimitExceeded": "usage_limit",
    "sessionBudgetExceeded": "usage_limit",
    "modelNotFound": "model",
    "cyberPolicy": "policy",
    "bioPolicy": "policy",
    "misalignmentPolicyViolation": "policy",
    "serverOverloaded": "overloaded",
    "policyCapacityUnavailable": "overloaded",
    "flexUnavailable": "overloaded",
    "internalServerError": "server_error",
    "badRequest": "bad_request",
    "activeTurnNotSteerable": "not_steerable",
    "contextWindowExceeded": "context_window",
    "sandboxError": "sandbox",
}

_CONNECTION_INFOS = {"httpConnectionFailed", "responseStreamConnectionFailed",
                     "responseStreamDisconnected", "responseTooManyFailedAttempts"}

_TEXT: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), key) for pattern, key in (
        (r"insufficient_quota|exceeded your current quota|billing", "quota"),
        (r"incorrect api key|invalid[_ ]api[_ ]key|invalid authentication|401 unauthorized"
         r"|\bunauthorized\b", "invalid_key"),
        (r"not logged in|login required|please (?:log|sign) in", "not_logged_in"),
        (r"usage limit", "usage_limit"),
        (r"rate[_ ]limit|too many requests|\b429\b", "rate_limited"),
        (r"model[^.]*(?:does not exist|not found)|model_not_found", "model"),
        (r"overloaded|\b503\b|\b529\b", "overloaded"),
        (r"internal server error|\b500\b|\b502\b|\b504\b", "server_error"),
        (r"context window|context_length_exceeded", "context_window"),
    ))


def _info(info: Any) -> tuple[str | None, int | None, bool]:
    """A ``codexErrorInfo`` (string or one-key tagged object) as (known key, status, connection)."""
    if isinstance(info, str):
        return _INFOS.get(info), None, False
    if isinstance(info, dict) and len(info) == 1:
        ((tag, body),) = info.items()
        status = body.get("httpStatusCode") if isinstance(body, dict) else None
        if not isinstance(status, int):
            status = None
        return _INFOS.get(tag), status, tag in _CONNECTION_INFOS
    return None, None, False


def _status_name(status: int | None) -> str | None:
    match status:
        case 401:
            return "invalid_key"
        case 403:
            return "forbidden"
        case 404:
            return "model"
        case 429:
            return "rate_limited"
        case 400:
            return "bad_request"
        case 503 | 529:
            return "overloaded"
        case int() if 500 <= status < 600:
            return "server_error"
    return None


def _text_name(text: str) -> str | None:
    for pattern, key in _TEXT:
        if pattern.search(text):
            return key
    return None
