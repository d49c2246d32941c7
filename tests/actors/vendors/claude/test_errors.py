"""Error classification: the messages and statuses Claude Code 2.1.197 really produced, plus prose."""

from __future__ import annotations

import pytest

from actors.vendors.claude.errors import classify

CASES = [
    # (text, status, tag, subtype) -> (class, code); the first rows are what the real CLI wrote.
    (("API Error: Request rejected (429) · fake rate_limit_error", 429, "rate_limit", None),
     ("limit", "claude.limit.rate_limited")),
    (("Failed to authenticate. API Error: 401 fake authentication_error", 401, "authentication_failed", None),
     ("auth", "claude.auth.invalid_key")),
    (("API Error: 529 fake overloaded_error. This is a server-side issue", 529, "server_error", None),
     ("overloaded", "claude.overloaded")),
    (("Credit balance is too low", 400, "billing_error", None), ("entitlement", "claude.entitlement.billing")),
    (("Failed to authenticate. API Error: 403 Your organization does not have access to this model", 403,
      "authentication_failed", None), ("entitlement", "claude.entitlement.model_unavailable")),
    (("There's an issue with the selected model (x). It may not exist or you may not have access to it.", 404,
      "model_not_found", None), ("entitlement", "claude.entitlement.model_unavailable")),
    (("Prompt is too long · the request is ~210000 tokens (limit 200000)", 400, "invalid_request", None),
     ("limit", "claude.limit.context_window")),
    (("API Error: 500 Internal server error. This is a server-side issue", 500, "server_error", None),
     ("overloaded", "claude.overloaded.server_error")),
    (("No conversation found with session ID: 0b8c", None, None, "error_during_execution"),
     ("unknown", "claude.unknown.session_not_found")),
    # Statuses refined by prose, tags alone, subtypes alone, prose alone.
    (("OAuth token has expired", 401, None, None), ("auth", "claude.auth.token_expired")),
    (("Claude usage limit reached", 429, None, None), ("limit", "claude.limit.usage_limit")),
    (("forbidden", 403, None, None), ("entitlement", "claude.entitlement.forbidden")),
    (("", 402, None, None), ("entitlement", "claude.entitlement.billing")),
    (("bad field", 400, None, None), ("protocol", "claude.protocol.invalid_request")),
    (("whatever", None, "rate_limit", None), ("limit", "claude.limit.rate_limited")),
    (("", None, None, "error_max_turns"), ("limit", "claude.limit.max_turns")),
    (("", None, None, "error_max_budget_usd"), ("limit", "claude.limit.budget")),
    (("Not logged in · Please run /login", None, None, None), ("auth", "claude.auth.login_required")),
    (("Invalid API key · Fix external API key", None, None, None), ("auth", "claude.auth.invalid_key")),
    (("Overloaded", None, None, None), ("overloaded", "claude.overloaded")),
    (("Too Many Requests", None, None, None), ("limit", "claude.limit.rate_limited")),
    (("something broke", None, None, "error_during_execution"), ("unknown", "claude.unknown.execution_error")),
    (("something broke", None, None, None), ("unknown", "claude.unknown")),
    (("", 418, None, None), ("unknown", "claude.unknown")),
]


@pytest.mark.parametrize(("given", "expected"), CASES)
def test_classify(given: tuple[str, int | None, str | None, str | None], expected: tuple[str, str]) -> None:
    text, status, tag, subtype = given
    verdict = classify(text, status=status, tag=tag, subtype=subtype)
    assert (verdict.error_class, verdict.code) == expected


def test_every_code_is_namespaced_and_matches_its_class() -> None:
    for (text, status, tag, subtype), (cls, code) in CASES:
        assert code.startswith("claude.")
        assert code.split(".")[1] == cls
