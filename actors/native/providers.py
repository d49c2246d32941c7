"""Which model to call and how: ``PROVIDER/NAME`` parsing, provider tables, and the resolver.

This is the one resolver of the native harness: the daemon calls ``resolve`` for a session's
``start`` (and ``set_model``) and ``corral run``/``probe`` for their one call; the worker turns the
``ProviderSettings`` it is sent into its adapter's ``models.ProviderConfig``. It imports only
``protocol`` and msgspec (no SDK, nothing of the daemon side, not ``models``), so every process
may import it.

A session names its model as ``PROVIDER/NAME`` (``openai/gpt-5-mini``,
``anthropic/claude-sonnet-4``, ``local/qwen3:8b``); NAME may itself contain slashes. PROVIDER is a
built-in kind (``gemini``, ``openai``, ``openai-chat``, ``anthropic``) or the name of a config
table ``[providers.NAME]`` with a ``kind``. ``resolve`` turns that, the config tables, the
session's options and the environments into one closed ``ProviderSettings``, first match wins:

* base URL: the session's ``options.base_url``; the table's ``base_url``; the SDK's public
  default (``DEFAULT_BASE_URLS``), given explicitly so no ``*_BASE_URL`` variable is consulted.
* key: the variable named by the table's ``api_key_env`` (built-in providers default to
  ``GEMINI_API_KEY``, ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``; a named provider has no default,
  so an OpenAI key is never sent to a local server by accident), looked up in the session's
  ``env`` and then in ``daemon_env``, the environment the caller passes (none: no key; the
  resolver never reads the process environment itself). A variable present in the session env
  wins even when empty. Only that one variable is read; an empty or missing key means no
  credential header at all.
* ``max_tokens_field``: the table's, else ``max_completion_tokens``.

Nothing else from the environment reaches an adapter: the SDKs' own variables
(``OPENAI_ORG_ID``, ``ANTHROPIC_CUSTOM_HEADERS``, ``GOOGLE_API_KEY``, proxies, …) are ignored by
construction (see ``_wire``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import msgspec
from msgspec import Meta

from protocol.native import MaxTokensField, ProviderKind, ProviderSettings


__all__ = [
    "DEFAULT_BASE_URLS",
    "DEFAULT_KEY_ENVS",
    "KINDS",
    "MaxTokensField",
    "ModelSpecError",
    "ProviderKind",
    "ProviderTable",
    "key_env",
    "parse_model",
    "resolve",
]

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

_Positive = Annotated[int, Meta(ge=1)]
_Retries = Annotated[int, Meta(ge=0, le=10)]
_Seconds = Annotated[float, Meta(gt=0)]


class ProviderTable(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """One ``[providers.NAME]`` config table; every key is optional for a built-in NAME.

    ``kind`` is required for any other NAME (an OpenAI-compatible server: vLLM, Ollama, LM Studio
    use ``openai-chat``; servers with the Responses API may use ``openai``). The limits default
    to ``ProviderSettings``'s; ``max_tokens_field`` only matters for ``openai-chat``.
    """

    kind: ProviderKind | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    max_response_bytes: _Positive | None = None
    max_retries: _Retries | None = None
    timeout: _Seconds | None = None
    max_tokens_field: MaxTokensField | None = None


class ModelSpecError(ValueError):
    """``model`` is not ``PROVIDER/NAME``, or PROVIDER is unknown; ``code`` is its stable code
    (``native.launch.bad_model``, ``native.launch.unknown_provider``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def parse_model(spec: str) -> tuple[str, str]:
    """Split ``PROVIDER/NAME`` at its first slash; ``native.launch.bad_model`` if either is empty."""
    provider, slash, name = spec.partition("/")
    if not slash or not provider.strip() or not name.strip():
        raise ModelSpecError("native.launch.bad_model",
                         f"model {spec!r} is not PROVIDER/NAME (e.g. openai/gpt-5-mini)")
    return provider.strip(), name.strip()


def key_env(provider: str, providers: Mapping[str, ProviderTable]) -> str | None:
    """The variable that holds ``provider``'s key, or ``None`` if it has none."""
    table = providers.get(provider, ProviderTable())
    if table.api_key_env is not None:
        return table.api_key_env or None
    kind = _builtin_kind(provider)
    return DEFAULT_KEY_ENVS[kind] if kind is not None else None


def resolve(
    spec: str,
    *,
    providers: Mapping[str, ProviderTable] | None = None,
    session_base_url: str | None = None,
    session_env: Mapping[str, str] | None = None,
    daemon_env: Mapping[str, str] | None = None,
) -> ProviderSettings:
    """The closed settings for model ``spec``, by the precedence in the module docstring.

    Raises ``ModelSpecError`` ``native.launch.unknown_provider`` for a PROVIDER that is neither
    built in nor configured with a ``kind``, and ``native.launch.bad_model`` for a bad spec.
    """
    provider, name = parse_model(spec)
    tables = providers or {}
    table = tables.get(provider, ProviderTable())
    kind = table.kind if table.kind is not None else _builtin_kind(provider)
    if kind is None:
        known = ", ".join(sorted({*KINDS, *tables}))
        raise ModelSpecError("native.launch.unknown_provider",
                         f"unknown model provider {provider!r} (known: {known}); add a "
                         f"[providers.{provider}] table with a kind")
    variable = key_env(provider, tables)
    key = ""
    if variable:
        if session_env is not None and variable in session_env:
            key = session_env[variable]
        else:
            key = (daemon_env or {}).get(variable, "")
    base_url = session_base_url or table.base_url or DEFAULT_BASE_URLS[kind]
    defaults = ProviderSettings(kind=kind, provider=provider, model=name, base_url=base_url)
    return msgspec.structs.replace(
        defaults,
        api_key=key.strip(),
        api_key_env=variable or "",
        max_response_bytes=table.max_response_bytes or defaults.max_response_bytes,
        max_retries=defaults.max_retries if table.max_retries is None else table.max_retries,
        timeout=table.timeout or defaults.timeout,
        chat_max_tokens_field=table.max_tokens_field or defaults.chat_max_tokens_field,
    )


def _builtin_kind(provider: str) -> ProviderKind | None:
    return next((kind for kind in KINDS if kind == provider), None)
