"""Our own retry loop around a model call (the SDKs' retries are off, so the count is ours).

A failed attempt is retried when its ``ModelError`` is retryable (429, 5xx, connection, timeout)
and nothing was streamed to the caller yet: once a delta went out, a retry would repeat it. The
delay is the server's ``Retry-After`` (or ``retry-after-ms``) capped at ``RETRY_AFTER_CAP``
seconds, else ``backoff * 2**attempt`` (no jitter: one user's session, not a fleet).
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from typing import TypeVar

from .errors import ModelError

__all__ = ["RETRY_AFTER_CAP", "parse_retry_after", "retry_delay", "retrying"]

RETRY_AFTER_CAP = 30.0
"""The longest wait between two attempts, whatever the server asks for."""

T = TypeVar("T")


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` may be seconds or an HTTP date (relative to ``now``, a Unix time). A value we
    cannot read counts as absent. ``headers`` must look names up case-insensitively (httpx's do).
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(when - (time.time() if now is None else now), 0.0)


def retry_delay(attempt: int, *, backoff: float, retry_after: float | None) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
    if retry_after is not None:
        return min(retry_after, RETRY_AFTER_CAP)
    return min(backoff * 2.0 ** attempt, RETRY_AFTER_CAP)


async def retrying(
    attempt: Callable[[], AsyncGenerator[T, None]],
    *,
    classify: Callable[[Exception], ModelError],
    max_retries: int,
    backoff: float,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> AsyncGenerator[T, None]:
    """Yield what ``attempt()`` yields, starting it again on a retryable failure.

    ``classify`` maps any exception of an attempt to a ``ModelError``; the last one is raised
    (``from`` the original) when retries are spent or the failure is not retryable.
    Cancellation: each attempt's generator is closed (``aclose``) before this one returns or
    raises, so its HTTP stream is closed with it; a cancelled backoff sleep simply ends.
    """
    tries = 0
    while True:
        streamed = False
        try:
            async with aclosing(attempt()) as items:
                async for item in items:
                    streamed = True
                    yield item
            return
        except Exception as exc:
            error = classify(exc)
            if streamed or not error.retryable or tries >= max_retries:
                if error is exc:
                    raise
                raise error from exc
            delay = retry_delay(tries, backoff=backoff, retry_after=error.retry_after)
        tries += 1
        await sleep(delay)
