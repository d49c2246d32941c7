"""Classify Claude Code's error results into corral's error classes and stable ``claude.*`` codes.

Input must be error-shaped: a ``result`` frame with ``is_error``, its ``api_error_status``, the
``error`` tag the CLI puts on its synthetic assistant message (``authentication_failed``,
``rate_limit``, ``billing_error``, ``model_not_found``, ``server_error``, ``invalid_request``), and
the error prose. Ordinary assistant text or tool output must never go through here: it quotes
words such as "credentials" or "capacity" in normal work.

Precedence: the HTTP status (the most reliable signal), then the CLI's tag and the result subtype,
then the prose. Codes are ``claude.<class>.<reason>`` (``claude.overloaded`` for 529) and
never change once published; clients map them to their own wording.
"""

from __future__ import annotations

import re

from actors.redaction import redact
from actors.vendors.errors import Classification
from protocol.events import ErrorClass

__all__ = ["classify"]

_Verdict = tuple[ErrorClass, str]
"""An error class plus a stable machine code."""

_AUTH: _Verdict = ("auth", "claude.auth.invalid_key")
_LOGIN: _Verdict = ("auth", "claude.auth.login_required")
_EXPIRED: _Verdict = ("auth", "claude.auth.token_expired")
_RATE: _Verdict = ("limit", "claude.limit.rate_limited")
_USAGE: _Verdict = ("limit", "claude.limit.usage_limit")
_CONTEXT: _Verdict = ("limit", "claude.limit.context_window")
_MAX_TURNS: _Verdict = ("limit", "claude.limit.max_turns")
_BUDGET: _Verdict = ("limit", "claude.limit.budget")
_BILLING: _Verdict = ("entitlement", "claude.entitlement.billing")
_MODEL: _Verdict = ("entitlement", "claude.entitlement.model_unavailable")
_FORBIDDEN: _Verdict = ("entitlement", "claude.entitlement.forbidden")
_OVERLOADED: _Verdict = ("overloaded", "claude.overloaded")
_SERVER: _Verdict = ("overloaded", "claude.overloaded.server_error")
_INVALID: _Verdict = ("protocol", "claude.protocol.invalid_request")
_NO_SESSION: _Verdict = ("unknown", "claude.unknown.session_not_found")
_EXECUTION: _Verdict = ("unknown", "claude.unknown.execution_error")
_UNKNOWN: _Verdict = ("unknown", "claude.unknown")

_BY_TAG: dict[str, _Verdict] = {
    "authentication_failed": _AUTH,
    "oauth_org_not_allowed": _FORBIDDEN,
    "rate_limit": _RATE,
    "billing_error": _BILLING,
    "model_not_found": _MODEL,
    "server_error": _SERVER,
    "overloaded": _OVERLOADED,
    "invalid_request": _INVALID,
    "error_max_turns": _MAX_TURNS,
    "error_max_budget_usd": _BUDGET,
}

_CONTEXT_RE = re.compile(r"prompt is too long|context (window|length)|too many tokens", re.I)
_BILLING_RE = re.compile(r"credit balance|billing|payment required|purchase credits", re.I)
_USAGE_RE = re.compile(r"usage limit|hit your limit|limit reached|out of extra usage", re.I)
_EXPIRED_RE = re.compile(r"oauth token has expired|token (is )?expired|expired token", re.I)
_MODEL_RE = re.compile(r"does not have access|not have access to (this|the) model|model.*(not found|not exist)", re.I)

# Checked in order; the first pattern that matches the prose wins.
_PROSE: list[tuple[re.Pattern[str], _Verdict]] = [
    (_CONTEXT_RE, _CONTEXT),
    (_BILLING_RE, _BILLING),
    (_USAGE_RE, _USAGE),
    (re.compile(r"rate[ _-]?limit|too many requests|\b429\b", re.I), _RATE),
    (re.compile(r"overloaded|\b529\b", re.I), _OVERLOADED),
    (_EXPIRED_RE, _EXPIRED),
    (re.compile(r"not logged in|please run /login|no api key|missing api key", re.I), _LOGIN),
    (re.compile(r"invalid (x-)?api[ -]?key|authentication_error|failed to authenticate|\b401\b", re.I), _AUTH),
    (_MODEL_RE, _MODEL),
    (re.compile(r"permission_error|forbidden|\b403\b", re.I), _FORBIDDEN),
    (re.compile(r"no conversation found", re.I), _NO_SESSION),
    (re.compile(r"internal server error|api_error|\b50[0-4]\b|server-side issue", re.I), _SERVER),
    (re.compile(r"invalid_request_error|invalid request", re.I), _INVALID),
]


def classify(
    text: str = "",
    *,
    status: int | None = None,
    tag: str | None = None,
    subtype: str | None = None,
) -> Classification:
    """Classify one error: ``status`` (HTTP), ``tag`` (the CLI's error tag), ``text`` (error prose).
    The classification's message is ``text``, redacted."""
    error_class, code = _verdict(text, status, tag, subtype)
    return Classification(error_class=error_class, code=code, message=redact(text))


def _verdict(text: str, status: int | None, tag: str | None, subtype: str | None) -> _Verdict:
    by_status = _by_status(status, text)
    if by_status is not None:
        return by_status
    for hint in (tag, subtype):
        if hint is not None and hint in _BY_TAG:
            return _BY_TAG[hint]
    for pattern, verdict in _PROSE:
        if pattern.search(text):
            return verdict
    if subtype == "error_during_execution":
        return _EXECUTION
    return _UNKNOWN


def _by_status(status: int | None, text: str) -> _Verdict | None:
    """The verdict of an HTTP status, refined by prose where one status covers several causes."""
    if status is None or status == 0:
        return None
    if status == 401:
        return _EXPIRED if _EXPIRED_RE.search(text) else _AUTH
    if status == 402:
        return _BILLING
    if status == 403:
        return _MODEL if _MODEL_RE.search(text) else _FORBIDDEN
    if status == 404:
        return _MODEL
    if status == 413:
        return _CONTEXT
    if status == 429:
        return _USAGE if _USAGE_RE.search(text) else _RATE
    if status == 529:
        return _OVERLOADED
    if status >= 500:
        return _SERVER
    if status == 400:
        if _CONTEXT_RE.search(text):
            return _CONTEXT
        return _BILLING if _BILLING_RE.search(text) else _INVALID
    return None
