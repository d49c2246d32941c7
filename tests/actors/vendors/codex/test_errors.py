"""Codex error classification: codexErrorInfo first, then the HTTP status, then the text."""

from __future__ import annotations

from typing import Any

import pytest

from actors.vendors.codex import classify
from actors.vendors.codex.errors import rpc_error


@pytest.mark.parametrize(("message", "status", "info", "code"), [
    # What Codex 0.171.0 reported against the fake server (see recordings/errors.ndjson).
    ("unexpected status 401 Unauthorized: Incorrect API key provided", None,
     {"httpConnectionFailed": {"httpStatusCode": 401}}, "codex.auth.invalid_key"),
    ("exceeded retry limit, last status: 429 Too Many Requests", None,
     {"responseTooManyFailedAttempts": {"httpStatusCode": 429}}, "codex.limit.rate_limited"),
    ("We're currently experiencing high demand", None, "internalServerError",
     "codex.overloaded.server_error"),
    ("Quota exceeded. Check your plan and billing details.", None, "usageLimitExceeded",
     "codex.entitlement.quota"),
    # Infos alone.
    ("x", None, "unauthorized", "codex.auth.invalid_key"),
    ("You've hit your usage limit.", None, "usageLimitExceeded", "codex.limit.usage_limit"),
    ("x", None, "modelNotFound", "codex.entitlement.model"),
    ("x", None, "cyberPolicy", "codex.entitlement.policy"),
    ("x", None, "serverOverloaded", "codex.overloaded.server"),
    ("x", None, "badRequest", "codex.protocol.bad_request"),
    ("x", None, {"activeTurnNotSteerable": {"turnKind": "review"}}, "codex.protocol.not_steerable"),
    ("x", None, "contextWindowExceeded", "codex.unknown.context_window"),
    ("x", None, "sandboxError", "codex.unknown.sandbox"),
    ("stream closed", None, {"responseStreamDisconnected": {"httpStatusCode": None}},
     "codex.unknown.connection"),
    ("x", None, {"responseStreamConnectionFailed": {"httpStatusCode": 503}},
     "codex.overloaded.server"),
    # Statuses alone.
    ("x", 403, None, "codex.auth.forbidden"),
    ("x", 404, None, "codex.entitlement.model"),
    ("x", 429, None, "codex.limit.rate_limited"),
    ("x", 502, None, "codex.overloaded.server_error"),
    ("insufficient_quota", 429, None, "codex.entitlement.quota"),
    # Text alone.
    ("Not logged in. Run codex login.", None, None, "codex.auth.not_logged_in"),
    ("Rate limit reached for requests", None, None, "codex.limit.rate_limited"),
    ("The model `gpt-9` does not exist", None, None, "codex.entitlement.model"),
    ("engine is overloaded", None, None, "codex.overloaded.server"),
    ("something odd", None, None, "codex.unknown.error"),
    ("something odd", None, "brandNewInfo", "codex.unknown.error"),
])
def test_classification(message: str, status: int | None, info: Any, code: str) -> None:
    found = classify(message, status=status, info=info)
    assert found.code == code
    assert found.code.split(".")[1] == found.error_class
    event = found.event()
    assert (event.code, event.error_class, event.message) == (code, found.error_class, found.message)


def test_messages_are_redacted() -> None:
    found = classify("Incorrect API key provided: sk-proj-AbC123xyz. See docs", status=401)
    assert "AbC123" not in found.message and "sk-***" in found.message


def test_rpc_errors_are_protocol_unless_the_text_says_more() -> None:
    plain = rpc_error("turn/start", -32600, "invalid params")
    assert (plain.error_class, plain.code) == ("protocol", "codex.protocol.rpc_error")
    assert plain.message == "turn/start failed (-32600): invalid params"
    assert rpc_error("thread/start", -32000, "not logged in").code == "codex.auth.not_logged_in"
