"""The adapters' closed configuration: ``ProviderConfig``, the worker's copy of the
``ProviderSettings`` the daemon resolved (``actors.native.providers.resolve``) and sent it.

Nothing else from the environment reaches an adapter: the SDKs' own variables
(``OPENAI_ORG_ID``, ``ANTHROPIC_CUSTOM_HEADERS``, ``GOOGLE_API_KEY``, proxies, …) are ignored by
construction (see ``_wire``).
"""

from __future__ import annotations

import msgspec

from protocol.native import MaxTokensField, ProviderKind

__all__ = ["ProviderConfig"]


class ProviderConfig(msgspec.Struct, kw_only=True, frozen=True):
    """Everything an adapter may use, resolved: no other source of settings exists.

    The worker's copy of the ``ProviderSettings`` it was sent (same fields). ``api_key`` is the
    key itself ("" for none) and never appears in ``repr``; ``api_key_env`` the variable it was
    read from ("" for none), which a missing key's error names. ``timeout`` is the connect timeout
    and the longest silence between two bytes of a response. ``retry_backoff`` is the first
    retry's delay (doubling after), ``chat_max_tokens_field`` the Chat Completions field that
    carries an output limit (``max_tokens`` for servers that predate ``max_completion_tokens``).
    """

    kind: ProviderKind
    provider: str
    model: str
    base_url: str
    api_key: str = ""
    api_key_env: str = ""
    max_response_bytes: int = 32 * 1024 * 1024
    max_retries: int = 2
    timeout: float = 300.0
    retry_backoff: float = 0.5
    chat_max_tokens_field: MaxTokensField = "max_completion_tokens"

    def __repr__(self) -> str:
        key = "'***'" if self.api_key else "''"
        return (f"ProviderConfig(kind={self.kind!r}, provider={self.provider!r}, "
                f"model={self.model!r}, base_url={self.base_url!r}, api_key={key})")

    @property
    def spec(self) -> str:
        """The model as the session gave it: ``PROVIDER/NAME``."""
        return f"{self.provider}/{self.model}"
