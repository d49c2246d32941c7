"""The ``gemini`` provider: ADK's own ``Gemini`` model, pinned to our closed configuration.

ADK's ``Gemini`` builds a google-genai ``Client`` per event loop from ``client_kwargs``; we give
it everything explicitly so that nothing ambient applies: the key (a placeholder when empty,
which the wire then drops, so ``GOOGLE_API_KEY`` is never consulted), ``vertexai=False`` (so
``GOOGLE_GENAI_USE_VERTEXAI`` is not), the base URL and ``api_version="v1beta"`` (so
``GOOGLE_GEMINI_BASE_URL`` and ``GOOGLE_GENAI_API_VERSION`` are not), the timeout, and our
policed ``httpx`` client (so no proxy variables, no aiohttp, the response limit holds).
google-genai's retries stay off (``retry_options=None``); ours wrap each call as for the other
providers, and genai's ``APIError`` is classified by its HTTP status.

Before each call, thought parts signed by another provider (``corral:<provider>:`` signatures)
are dropped from the request, since Gemini would reject a foreign signature.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from google.adk.models.google_llm import Gemini
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import Field, PrivateAttr

from ._base import classify_transport, find_model_error, missing_key, wire_policy
from ._retry import parse_retry_after, retrying
from ._wire import ClosePool, httpx_client
from .config import ProviderConfig
from .errors import ModelError, error_for_status, redact

__all__ = ["GeminiLlm", "gemini_model"]

_NO_KEY = "corral-no-key"


def gemini_model(config: ProviderConfig) -> GeminiLlm:
    """A ``GeminiLlm`` for ``config`` (``kind = "gemini"``)."""
    http, close = httpx_client(wire_policy(config))
    options = types.HttpOptions(base_url=config.base_url, api_version="v1beta",
                                timeout=int(config.timeout * 1000), httpx_async_client=http)
    llm = GeminiLlm(model=config.model, provider=config, base_url=config.base_url,
                    api_version="v1beta", retry_options=None,
                    client_kwargs={"api_key": config.api_key or _NO_KEY, "vertexai": False,
                                   "http_options": options})
    llm._close_pool = close
    return llm


class GeminiLlm(Gemini):
    """ADK's ``Gemini`` with corral's retries, error codes and wire (see the module docstring)."""

    provider: ProviderConfig = Field(exclude=True, repr=False)
    _close_pool: ClosePool | None = PrivateAttr(default=None)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """ADK's Gemini call under our retry loop; raises ``ModelError`` when it fails."""
        _drop_foreign_thoughts(llm_request)
        config = self.provider
        refused = missing_key(config)
        if refused is not None:
            raise refused
        llm_request.model = config.model
        responses = retrying(lambda: Gemini.generate_content_async(self, llm_request, stream),
                             classify=self._classify, max_retries=config.max_retries,
                             backoff=config.retry_backoff)
        async with aclosing(responses) as items:
            async for response in items:
                yield response

    async def aclose(self) -> None:
        """Close the connections this model holds in the running event loop."""
        if self._close_pool is not None:
            await self._close_pool()

    def _classify(self, exc: Exception) -> ModelError:
        found = find_model_error(exc)
        if found is not None:
            return found
        secret = self.provider.api_key
        if isinstance(exc, genai_errors.APIError):
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None)
            retry_after = parse_retry_after(headers) if headers is not None else None
            if isinstance(exc.code, int) and exc.code >= 400:
                return error_for_status(exc.code, exc.message or str(exc.status),
                                        code=exc.status, retry_after=retry_after, secret=secret)
            return ModelError("native.unknown.error", redact(str(exc), secret))
        return classify_transport(exc) or ModelError(
            "native.unknown.error", redact(f"{type(exc).__name__}: {exc}", secret))


def _drop_foreign_thoughts(request: LlmRequest) -> None:
    for content in request.contents:
        if content.parts and any(_foreign(p) for p in content.parts):
            content.parts = [p for p in content.parts if not _foreign(p)]


def _foreign(part: types.Part) -> bool:
    signature = part.thought_signature
    return signature is not None and signature.startswith(b"corral:")
