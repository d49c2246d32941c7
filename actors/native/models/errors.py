"""Model-call failures as one exception with a stable ``native.<class>.<what>`` code.

Every failure an adapter raises is a ``ModelError``; the worker turns it into an ``error`` event
(``ModelError.event()``) and a ``result`` with ``is_error``. The class is the code's second part.

====================================  ===========  ==============================================
code                                  retried      when
====================================  ===========  ==============================================
``native.auth.invalid_key``           no           HTTP 401 (a missing, wrong or revoked key)
``native.auth.forbidden``             no           HTTP 403
``native.auth.missing_key``           no           no key for the vendor's public endpoint (no
                                                   ``base_url`` of the user's); nothing was sent
``native.limit.rate_limited``         yes          HTTP 429
``native.entitlement.quota``          no           HTTP 429 whose code is ``insufficient_quota``
``native.entitlement.model``          no           HTTP 404 (unknown model or endpoint)
``native.overloaded.server``          yes          HTTP 503, 529; a stream's ``overloaded`` error
``native.overloaded.server_error``    yes          HTTP 500, 502, 504 and other 5xx; a stream's
                                                   ``server_error``
``native.overloaded.connection``      yes          the connection broke before the response
                                                   began (or failed otherwise after connecting)
``native.network.unreachable``        no           the endpoint's name does not resolve, or its
                                                   connection was refused or has no route
``native.overloaded.timeout``         yes          no byte within the configured timeout
``native.protocol.bad_request``       no           any other 4xx (400, 413, 422, …)
``native.protocol.malformed``         no           a response we cannot parse: bad JSON, bad SSE,
                                                   tool arguments that are not a JSON object
``native.protocol.too_large``         no           the response passed ``max_response_bytes``
``native.protocol.unsupported``       no           the conversation holds a part this API cannot
                                                   carry
``native.launch.bad_model``           no           ``model`` is not ``PROVIDER/NAME``
``native.launch.unknown_provider``    no           PROVIDER is neither built in nor configured
``native.unknown.error``              no           anything else (a stream-level failure event)
====================================  ===========  ==============================================

"Retried" means the adapter retries it (``max_retries``, before any output was streamed); the
error surfaces once retries are spent. Messages are redacted (``actors.redaction``): anything shaped
like an API key and the configured key itself are masked.
"""

from __future__ import annotations

from typing import cast

from actors.redaction import redact
from protocol.events import Error, ErrorClass

__all__ = ["CODES", "ModelError", "error_for_status", "redact"]

CODES: frozenset[str] = frozenset({
    "native.auth.invalid_key", "native.auth.forbidden", "native.auth.missing_key",
    "native.limit.rate_limited", "native.network.unreachable", "native.entitlement.quota",
    "native.entitlement.model", "native.overloaded.server",
    "native.overloaded.server_error", "native.overloaded.connection", "native.overloaded.timeout",
    "native.protocol.bad_request", "native.protocol.malformed", "native.protocol.too_large",
    "native.protocol.unsupported", "native.launch.bad_model", "native.launch.unknown_provider",
    "native.unknown.error",
})
"""Every code this package raises (a golden test pins the set)."""

_RETRIED = frozenset({
    "native.limit.rate_limited", "native.overloaded.server", "native.overloaded.server_error",
    "native.overloaded.connection", "native.overloaded.timeout",
})


class ModelError(Exception):
    """A model call failed; ``code`` is stable, ``message`` is redacted and for people.

    ``status`` is the HTTP status when there was one; ``retry_after`` the delay in seconds the
    server asked for (``Retry-After`` / ``retry-after-ms``), if any.
    """

    def __init__(self, code: str, message: str, *, status: int | None = None,
                 retry_after: float | None = None) -> None:
        if code not in CODES:
            raise ValueError(f"unknown model error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after

    @property
    def error_class(self) -> ErrorClass:
        """The family: ``auth``, ``limit``, ``entitlement``, ``overloaded``, ``protocol``, …"""
        return cast(ErrorClass, self.code.split(".")[1])

    @property
    def retryable(self) -> bool:
        """Whether the adapter retries this failure (429, 5xx, connection, timeout)."""
        return self.code in _RETRIED

    def event(self) -> Error:
        """The normalized ``error`` event for this failure."""
        return Error(code=self.code, message=self.message, error_class=self.error_class)

    def __repr__(self) -> str:
        return f"ModelError({self.code!r}, {self.message!r}, status={self.status!r})"


def error_for_status(status: int, message: str, *, code: str | None = None,
                     retry_after: float | None = None, secret: str = "") -> ModelError:
    """The ``ModelError`` for an HTTP error ``status``; ``code`` is the API's own error code."""
    text = redact(message, secret) or f"HTTP {status}"
    if status == 401:
        ours = "native.auth.invalid_key"
    elif status == 403:
        ours = "native.auth.forbidden"
    elif status == 429:
        quota = code == "insufficient_quota"
        ours = "native.entitlement.quota" if quota else "native.limit.rate_limited"
    elif status == 404:
        ours = "native.entitlement.model"
    elif status in (503, 529):
        ours = "native.overloaded.server"
    elif status >= 500:
        ours = "native.overloaded.server_error"
    else:
        ours = "native.protocol.bad_request"
    return ModelError(ours, f"HTTP {status}: {text}", status=status, retry_after=retry_after)

