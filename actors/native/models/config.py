"""Which model to call and how: ``PROVIDER/NAME`` parsing, provider tables, and the resolver.

A session names its model as ``PROVIDER/NAME`` (``openai/gpt-5-mini``,
``anthropic/claude-sonnet-4``, ``local/qwen3:8b``); NAME may itself contain slashes. PROVIDER is a
built-in kind (``gemini``, ``openai``, ``openai-chat``, ``anthropic``) or the name of a config
table ``[providers.NAME]`` with a ``kind``. ``resolve_provider`` turns that, the config tables,
the session's options and the environments into one closed ``ProviderConfig``, first match wins:

* base URL: the session's ``options.base_url``; the table's ``base_url``; the SDK's public
  default (``DEFAULT_BASE_URLS``), given explicitly so no ``*_BASE_URL`` variable is consulted.
* key: the variable named by the table's ``api_key_env`` (built-in providers default to
  ``GEMINI_API_KEY``, ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``; a named provider has no default,
  so an OpenAI key is never sent to a local server by accident), looked up in the session's
  ``env`` and then the daemon's. A variable present in the session env wins even when empty.
  Only that one variable is read; an empty or missing key means no credential header at all.

Nothing else from the environment reaches an adapter: the SDKs' own variables
(``OPENAI_ORG_ID``, ``ANTHROPIC_CUSTOM_HEADERS``, ``GOOGLE_API_KEY``, proxies, …) are ignored by
construction (see ``_wire``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from .errors import ModelError

__all__ = [
    "DEFAULT_BASE_URLS",
    "DEFAULT_KEY_ENVS",
    "ProviderConfig",
    "ProviderKind",
    "ProviderTable",
    "parse_model",
    "resolve_provider",
]

ProviderKind = Literal["openai", "openai-chat", "anthropic", "gemini"]
"""The wire protocol an adapter speaks: Responses, Chat Completions, Messages, Gemini."""

KINDS: tuple[ProviderKind, ...] = ("openai", "openai-chat", "anthropic", "gemini")

DEFAULT_BASE_URLS: Mapping[ProviderKind, str] = {
    "openai": "https://api.openai.com/v1",
    "openai-chat": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
"""Each SDK's public endpoint (OpenAI-style URLs end in ``/v1``; Anthropic and Gemini do not)."""

DEFAULT_KEY_ENVS: Mapping[ProviderKind, str] = {
    "openai": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
}
"""The key variable of each built-in provider."""

MaxTokensField = Literal["max_completion_tokens", "max_tokens"]
"""Where Chat Completions carries the output limit (older compatible servers want ``max_tokens``)."""

_Positive = Annotated[int, Meta(ge=1)]
_Retries = Annotated[int, Meta(ge=0, le=10)]
_Seconds = Annotated[float, Meta(gt=0)]


class ProviderTable(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """One ``[providers.NAME]`` config table; every key is optional for a built-in NAME.

    ``kind`` is required for any other NAME (an OpenAI-compatible server: vLLM, Ollama, LM Studio
    use ``openai-chat``; servers with the Responses API may use ``openai``). The limits default
    to ``ProviderConfig``'s; ``max_tokens_field`` only matters for ``openai-chat``.
    """

    kind: ProviderKind | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    max_response_bytes: _Positive | None = None
    max_retries: _Retries | None = None
    timeout: _Seconds | None = None
    max_tokens_field: MaxTokensField | None = None


class ProviderConfig(msgspec.Struct, kw_only=True, frozen=True):
    """Everything an adapter may use, resolved: no other source of settings exists.

    ``api_key`` is the key itself ("" for none) and never appears in ``repr``; ``api_key_env``
    the variable it was read from ("" for none), which a missing key's error names. ``timeout`` is
    the connect timeout and the longest silence between two bytes of a response.
    ``retry_backoff`` is the first retry's delay (doubling after), ``chat_max_tokens_field`` the
    Chat Completions field that carries an output limit (``max_tokens`` for servers that predate
    ``max_completion_tokens``).
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


def parse_model(spec: str) -> tuple[str, str]:
    """Split ``PROVIDER/NAME`` at its first slash; ``native.launch.bad_model`` if either is empty."""
    provider, slash, name = spec.partition("/")
    if not slash or not provider.strip() or not name.strip():
        raise ModelError("native.launch.bad_model",
                         f"model {spec!r} is not PROVIDER/NAME (e.g. openai/gpt-5-mini)")
    return provider.strip(), name.strip()


def resolve_provider(
    spec: str,
    *,
    providers: Mapping[str, ProviderTable] | None = None,
    session_base_url: str | None = None,
    session_env: Mapping[str, str] | None = None,
    daemon_env: Mapping[str, str] | None = None,
) -> ProviderConfig:
    """The closed config for model ``spec``, by the precedence in the module docstring.

    Raises ``ModelError`` ``native.launch.unknown_provider`` for a PROVIDER that is neither
    built in nor configured with a ``kind``, and ``native.launch.bad_model`` for a bad spec.
    """
    provider, name = parse_model(spec)
    table = (providers or {}).get(provider, ProviderTable())
    kind = table.kind if table.kind is not None else _builtin_kind(provider)
    if kind is None:
        known = ", ".join(sorted({*KINDS, *(providers or {})}))
        raise ModelError("native.launch.unknown_provider",
                         f"unknown model provider {provider!r} (known: {known}); add a "
                         f"[providers.{provider}] table with a kind")
    key_env = table.api_key_env
    if key_env is None and _builtin_kind(provider) is not None:
        key_env = DEFAULT_KEY_ENVS[kind]
    key = ""
    if key_env:
        if session_env is not None and key_env in session_env:
            key = session_env[key_env]
        else:
            key = (daemon_env or {}).get(key_env, "")
    base_url = session_base_url or table.base_url or DEFAULT_BASE_URLS[kind]
    defaults = ProviderConfig(kind=kind, provider=provider, model=name, base_url=base_url)
    return msgspec.structs.replace(
        defaults,
        api_key=key.strip(),
        api_key_env=key_env or "",
        max_response_bytes=table.max_response_bytes or defaults.max_response_bytes,
        max_retries=defaults.max_retries if table.max_retries is None else table.max_retries,
        timeout=table.timeout or defaults.timeout,
        chat_max_tokens_field=table.max_tokens_field or defaults.chat_max_tokens_field,
    )


def _builtin_kind(provider: str) -> ProviderKind | None:
    for kind in KINDS:
        if provider == kind:
            return kind
    return None
