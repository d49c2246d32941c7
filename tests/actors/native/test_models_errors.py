"""Error classification and the retry policy (pure, and the retry loop with a recorded sleep)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from actors.native.models import CODES, ModelError
from actors.native.models._retry import parse_retry_after, retry_delay, retrying
from actors.native.models.errors import error_for_status

GOLDEN_CODES = {
    "native.auth.invalid_key", "native.auth.forbidden", "native.auth.missing_key",
    "native.limit.rate_limited", "native.network.unreachable", "native.entitlement.quota",
    "native.entitlement.model", "native.overloaded.server",
    "native.overloaded.server_error", "native.overloaded.connection", "native.overloaded.timeout",
    "native.protocol.bad_request", "native.protocol.malformed", "native.protocol.too_large",
    "native.protocol.unsupported", "native.launch.bad_model", "native.launch.unknown_provider",
    "native.unknown.error",
}


def test_the_code_list_is_pinned() -> None:
    assert CODES == GOLDEN_CODES


@pytest.mark.parametrize(("status", "code", "retried"), [
    (401, "native.auth.invalid_key", False), (403, "native.auth.forbidden", False),
    (429, "native.limit.rate_limited", True), (404, "native.entitlement.model", False),
    (500, "native.overloaded.server_error", True), (502, "native.overloaded.server_error", True),
    (504, "native.overloaded.server_error", True), (503, "native.overloaded.server", True),
    (529, "native.overloaded.server", True), (400, "native.protocol.bad_request", False),
    (413, "native.protocol.bad_request", False), (422, "native.protocol.bad_request", False),
])
def test_status_classification(status: int, code: str, retried: bool) -> None:
    error = error_for_status(status, "boom")
    assert (error.code, error.retryable, error.status) == (code, retried, status)
    assert error.event().code == code
    assert error.event().error_class == code.split(".")[1]


def test_insufficient_quota_is_not_a_rate_limit() -> None:
    error = error_for_status(429, "You exceeded your quota", code="insufficient_quota")
    assert (error.code, error.retryable) == ("native.entitlement.quota", False)


def test_messages_are_redacted() -> None:
    # the rule itself is tested in tests/actors/test_redaction.py; this is the path through it
    assert "abcdef" not in error_for_status(401, "Incorrect API key provided: sk-proj-abcdef123").message
    assert "hunter2" not in error_for_status(401, "key hunter2 refused", secret="hunter2").message
    assert "AIzaSyD" not in error_for_status(400, "bad key AIzaSyD0123456789abc").message


def test_unknown_codes_cannot_be_raised() -> None:
    with pytest.raises(ValueError):
        ModelError("native.made.up", "x")


@pytest.mark.parametrize(("headers", "expected"), [
    ({}, None), ({"retry-after": "2"}, 2.0), ({"retry-after": "0.5"}, 0.5),
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25), ({"retry-after": "soon"}, None),
    ({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, 10.0), ({"retry-after": "-3"}, 0.0),
])
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    now = 1445412480.0  # 07:28:00 that day
    assert parse_retry_after(headers, now=now) == expected


def test_retry_delay_backs_off_and_caps() -> None:
    assert [retry_delay(n, backoff=0.5, retry_after=None) for n in range(8)] == [
        0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert retry_delay(0, backoff=0.5, retry_after=3.0) == 3.0
    assert retry_delay(0, backoff=0.5, retry_after=120.0) == 30.0


class _Script:
    """Attempts that fail with the given errors (then yield two items), counting starts."""

    def __init__(self, *failures: Exception, fail_after_first: Exception | None = None) -> None:
        self.failures = list(failures)
        self.fail_after_first = fail_after_first
        self.starts = 0
        self.sleeps: list[float] = []

    async def attempt(self) -> AsyncGenerator[str, None]:
        self.starts += 1
        if self.failures:
            raise self.failures.pop(0)
        yield "a"
        if self.fail_after_first is not None:
            raise self.fail_after_first
        yield "b"

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def run(self, max_retries: int = 2) -> list[str]:
        async def go() -> list[str]:
            items = retrying(self.attempt, classify=_classify, max_retries=max_retries,
                             backoff=0.5, sleep=self.sleep)
            return [item async for item in items]

        return asyncio.run(go())


def _classify(exc: Exception) -> ModelError:
    if isinstance(exc, ModelError):
        return exc
    return ModelError("native.overloaded.connection", str(exc))


def test_retryable_failures_are_retried_with_backoff_and_retry_after() -> None:
    script = _Script(error_for_status(503, "busy"), error_for_status(429, "slow", retry_after=7))
    assert script.run() == ["a", "b"]
    assert (script.starts, script.sleeps) == (3, [0.5, 7.0])


def test_retries_are_bounded() -> None:
    script = _Script(*(error_for_status(500, "down") for _ in range(3)))
    with pytest.raises(ModelError) as caught:
        script.run(max_retries=2)
    assert caught.value.code == "native.overloaded.server_error"
    assert (script.starts, script.sleeps) == (3, [0.5, 1.0])


def test_foreign_errors_are_classified_and_chained() -> None:
    script = _Script(OSError("refused"), OSError("refused"))
    with pytest.raises(ModelError) as caught:
        script.run(max_retries=1)
    assert caught.value.code == "native.overloaded.connection"
    assert isinstance(caught.value.__cause__, OSError)


def test_not_retried_when_not_retryable_or_after_output() -> None:
    script = _Script(error_for_status(401, "no"))
    with pytest.raises(ModelError):
        script.run()
    assert script.starts == 1
    midway = _Script(fail_after_first=error_for_status(503, "dropped"))
    with pytest.raises(ModelError):
        midway.run()
    assert (midway.starts, midway.sleeps) == (1, [])
