"""What the SDK-based adapters share: closed config, retries, error classification, closing.

``SdkLlm`` is an ADK ``BaseLlm`` whose subclasses implement one ``_attempt`` (one HTTP request,
yielding partial responses and then the final one, raising whatever the SDK raises) and
``_classify_sdk`` (their SDK's exceptions to ``ModelError``). ``generate_content_async`` wraps
the attempt in our retry loop. ``stream`` is honoured on the wire: when ADK did not ask to
stream (``corral probe``, ``corral run``, compaction), the attempt sends one plain request and
yields only the final response. That matters for local servers whose streamed tool calls are
broken, which is what ``corral probe`` is there to tell apart.

Cancellation: cancelling the task that iterates ``generate_content_async`` raises
``CancelledError`` inside the SDK's read; the attempt's ``async with stream`` closes the
response, which closes its connection, before the error leaves the generator.
"""

from __future__ import annotations

import abc
import errno
import socket
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import httpx
import httpx2
from google.adk.models import LlmCapabilities
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from pydantic import Field, PrivateAttr

from actors.native.providers import DEFAULT_BASE_URLS
from actors.native.models.tracing import end_call, start_call

from ._retry import retrying
from ._wire import ClosePool, WirePolicy
from .config import ProviderConfig
from .errors import ModelError, redact

__all__ = ["SdkLlm", "classify_transport", "find_model_error", "missing_key", "wire_policy"]


def wire_policy(config: ProviderConfig) -> WirePolicy:
    """The wire rules of ``config``: its key, response limit and timeout."""
    return WirePolicy(config.api_key, config.max_response_bytes, config.timeout)


def find_model_error(exc: BaseException) -> ModelError | None:
    """A ``ModelError`` that ``exc`` is or was caused by (an SDK may wrap ours)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ModelError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def missing_key(config: ProviderConfig) -> ModelError | None:
    """``native.auth.missing_key`` when ``config`` has no key for its vendor's public endpoint.

    Every vendor's public API wants a key, so a request without one is sure to fail (and, off
    the network, would fail as a connection error instead). A ``base_url`` of the user's (a
    local or compatible server, many of which want none) goes out without a key, as asked.
    """
    if config.api_key or config.base_url.rstrip("/") != DEFAULT_BASE_URLS[config.kind]:
        return None
    if config.api_key_env:
        why = f"{config.api_key_env} is not set"
    else:
        why = f"its [providers.{config.provider}] table names no api_key_env"
    return ModelError("native.auth.missing_key",
                      f"no API key for {config.spec} at {config.base_url}: {why}")


def classify_transport(exc: BaseException) -> ModelError | None:
    """Timeouts and network failures of either httpx, found anywhere in ``exc``'s causes.

    A name that does not resolve, or a connection refused or without a route, is
    ``native.network.unreachable``: retrying it soon would meet the same answer.
    """
    current: BaseException | None = exc
    transport: BaseException | None = None
    for _ in range(8):
        if current is None:
            break
        if isinstance(current, (httpx.TimeoutException, httpx2.TimeoutException)):
            return ModelError("native.overloaded.timeout", "the model endpoint timed out")
        if isinstance(current, (socket.gaierror, ConnectionRefusedError)) or (
                isinstance(current, OSError) and current.errno in _UNREACHABLE):
            return ModelError("native.network.unreachable",
                              f"the model endpoint is unreachable: {current}")
        if transport is None and isinstance(current, (httpx.TransportError, httpx2.TransportError)):
            transport = current
        current = current.__cause__ or current.__context__
    if transport is not None:
        return ModelError("native.overloaded.connection",
                          f"the model endpoint could not be reached: {type(transport).__name__}")
    return None


_UNREACHABLE = frozenset({errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH})


class SdkLlm(BaseLlm):
    """An ADK model over an official SDK; see the module docstring."""

    provider: ProviderConfig = Field(exclude=True, repr=False)
    _close_pool: ClosePool | None = PrivateAttr(default=None)
    _sdk: Any = PrivateAttr(default=None)

    @property
    def capabilities(self) -> LlmCapabilities:
        """Declared outright (ADK's name-based fallback is deprecated)."""
        return LlmCapabilities(output_schema_and_tools=False)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """One model turn: partial responses (when ``stream``), then the final one.

        Raises ``ModelError`` (see ``errors``) once our retries are spent.
        """
        config = self.provider
        refused = missing_key(config)
        if refused is not None:
            raise refused
        responses = retrying(lambda: self._answer(llm_request, stream), classify=self._classify,
                             max_retries=config.max_retries, backoff=config.retry_backoff)
        call = start_call(config.provider, config.model)
        if call is None:
            async with aclosing(responses) as items:
                async for response in items:
                    yield response
            return
        error: BaseException | None = None
        try:
            async with aclosing(responses) as items:
                async for response in items:
                    if not response.partial:
                        call.response = response
                    yield response
        except GeneratorExit:  # the caller stopped reading (ADK had what it needed)
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            end_call(call, error)

    async def _answer(self, llm_request: LlmRequest,
                      stream: bool) -> AsyncGenerator[LlmResponse, None]:
        """One attempt as the caller sees it: without partials when it did not ask to stream."""
        async with aclosing(self._attempt(llm_request, stream)) as items:
            async for response in items:
                if stream or not response.partial:
                    yield response

    async def aclose(self) -> None:
        """Close the connections this model holds in the running event loop."""
        if self._close_pool is not None:
            await self._close_pool()

    @abc.abstractmethod
    def _attempt(self, llm_request: LlmRequest, stream: bool) -> AsyncGenerator[LlmResponse, None]:
        """One request: streamed (partial responses, then the final one) or, without
        ``stream``, one plain request and its final response alone."""

    @abc.abstractmethod
    def _classify_sdk(self, exc: Exception) -> ModelError | None:
        """This SDK's exception as a ``ModelError``, or ``None`` if it is not one of its own."""

    def _classify(self, exc: Exception) -> ModelError:
        found = find_model_error(exc)
        if found is not None:
            return found
        ours = self._classify_sdk(exc) or classify_transport(exc)
        if ours is not None:
            return ours
        return ModelError("native.unknown.error",
                          redact(f"{type(exc).__name__}: {exc}", self.provider.api_key))

    def _error_body(self, body: Any) -> tuple[str | None, str | None]:
        """``(message, code)`` out of an SDK's error ``body``, if it has them."""
        if isinstance(body, dict):
            inner = body.get("error", body)
            if isinstance(inner, dict):
                message, code = inner.get("message"), inner.get("code") or inner.get("type")
                return (message if isinstance(message, str) else None,
                        code if isinstance(code, str) else None)
        return None, None
