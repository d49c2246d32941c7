"""The daemon side of native model configuration: ``[providers.NAME]`` tables, the resolver, prices.

The daemon resolves a session's ``PROVIDER/NAME`` into the ``ProviderSettings`` it sends the
worker in ``start`` (and ``set_model``); first match wins:

* base URL: the session's ``options.base_url``; the table's ``base_url``; the SDK's public
  default (OpenAI-style URLs end in ``/v1``, Anthropic and Gemini do not);
* key: the variable named by the table's ``api_key_env`` (built-in providers default to
  ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``; a named provider has none, so
  an OpenAI key never reaches a local server by accident), looked up in the session's ``env``
  and then the daemon's. Only that variable is read; an empty key sends no credential.

This is the same precedence as ``actors.native.models.resolve_provider`` (a test pins the two
together), kept here because importing ``actors.native.models`` imports ADK and the SDKs, which
the daemon must not pay for. Nothing here imports them.

Prices come from the price table shipped in the package (``actors/defaults/prices.toml``, the
same bytes as the repository's ``config/prices.toml``), overlaid by ``prices.toml`` beside the
user's configuration file (``~/.config/corral/prices.toml``): ``[MODEL] input = …, output = …,
cache_read = …, cache_write = …`` in US dollars per million tokens; a model in the user's table
replaces the shipped entry. ``load_prices`` never fails: a bad entry is a warning and is left out
(its model then has ``cost_usd: null``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from protocol.messages import SessionWarning
from protocol.native import Price, ProviderKind, ProviderSettings
from protocol.native_context import ContextSettings
from supervisor.config import default_config_path

from actors import defaults

from .compaction.settings import CompactionConfig

__all__ = [
    "DEFAULT_BASE_URLS",
    "DEFAULT_KEY_ENVS",
    "KINDS",
    "PRICES_FILE",
    "ModelSpecError",
    "NativeConfig",
    "ProviderTable",
    "ProvidersConfig",
    "decode_providers",
    "key_env",
    "key_warnings",
    "load_prices",
    "resolve",
    "user_prices_path",
]

KINDS: tuple[ProviderKind, ...] = ("openai", "openai-chat", "anthropic", "gemini")

DEFAULT_BASE_URLS: Mapping[ProviderKind, str] = {
    "openai": "https://api.openai.com/v1",
    "openai-chat": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}

DEFAULT_KEY_ENVS: Mapping[ProviderKind, str] = {
    "openai": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
}

PRICES_FILE = defaults.file(defaults.PRICES)
"""The price table shipped in the package (``config/prices.toml`` in the repository)."""

_Positive = Annotated[int, Meta(ge=1)]
_Retries = Annotated[int, Meta(ge=0, le=10)]
_Seconds = Annotated[float, Meta(gt=0)]


class ProviderTable(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """One ``[providers.NAME]`` table; ``kind`` is required for a NAME that is not built in."""

    kind: ProviderKind | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    max_response_bytes: _Positive | None = None
    max_retries: _Retries | None = None
    timeout: _Seconds | None = None


class NativeConfig(ContextSettings, kw_only=True, frozen=True, forbid_unknown_fields=True,
                   omit_defaults=False):
    """The ``[native]`` section: the instruction files and skills of native sessions (each
    key but ``prewarm`` is a field of ``protocol.native_context.ContextSettings``, sent to every
    worker), ``prewarm`` and ``[native.compaction]``."""

    compaction: CompactionConfig = CompactionConfig()
    """``[native.compaction]``: the context compaction of native sessions (off by default)."""
    prewarm: bool = True
    """Start the fork server in the background a few seconds after the daemon is ready (at low
    CPU priority), so the first native session does not wait for its warm-up."""

    def context(self) -> ContextSettings:
        """The settings as the ``start`` frame carries them (``~`` expanded in the paths)."""
        fields = msgspec.structs.asdict(self)
        del fields["compaction"], fields["prewarm"]
        for key in ("import_roots", "skill_roots", "trusted_roots"):
            fields[key] = [os.path.expanduser(p) for p in fields[key]]
        return ContextSettings(**fields)


ProvidersConfig = dict[str, ProviderTable]
"""The ``[providers]`` section: provider name → its table."""


class ModelSpecError(ValueError):
    """``model`` is not ``PROVIDER/NAME``, or PROVIDER is unknown; ``code`` is its stable code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def decode_providers(raw: Mapping[str, Any]) -> tuple[ProvidersConfig, list[str]]:
    """The ``[providers]`` tables as Structs, and a warning naming each one that was dropped."""
    tables: ProvidersConfig = {}
    warnings: list[str] = []
    for name, table in raw.items():
        try:
            tables[name] = msgspec.convert(table, ProviderTable)
        except msgspec.ValidationError as exc:
            warnings.append(f"bad table 'providers.{name}': {exc}; provider ignored")
            continue
        if tables[name].kind is None and name not in KINDS:
            warnings.append(f"'providers.{name}' has no kind (one of {', '.join(KINDS)}); "
                            "provider ignored")
            del tables[name]
    return tables, warnings


def key_env(provider: str, providers: Mapping[str, ProviderTable]) -> str | None:
    """The variable that holds ``provider``'s key, or ``None`` if it has none."""
    table = providers.get(provider, ProviderTable())
    if table.api_key_env is not None:
        return table.api_key_env or None
    kind = _builtin(provider)
    return DEFAULT_KEY_ENVS[kind] if kind is not None else None


def resolve(spec: str, *, providers: Mapping[str, ProviderTable],
            session_base_url: str | None = None, session_env: Mapping[str, str] | None = None,
            daemon_env: Mapping[str, str] | None = None) -> ProviderSettings:
    """``ProviderSettings`` for model ``spec`` by the precedence in the module docstring.

    Raises ``ModelSpecError`` (``native.launch.bad_model`` or ``native.launch.unknown_provider``).
    """
    provider, slash, name = spec.partition("/")
    provider, name = provider.strip(), name.strip()
    if not slash or not provider or not name:
        raise ModelSpecError("native.launch.bad_model",
                             f"model {spec!r} is not PROVIDER/NAME (e.g. openai/gpt-5-mini)")
    table = providers.get(provider, ProviderTable())
    kind = table.kind if table.kind is not None else _builtin(provider)
    if kind is None:
        known = ", ".join(sorted({*KINDS, *providers}))
        raise ModelSpecError("native.launch.unknown_provider",
                             f"unknown model provider {provider!r} (known: {known}); add a "
                             f"[providers.{provider}] table with a kind")
    variable = key_env(provider, providers)
    key = ""
    if variable:
        if session_env is not None and variable in session_env:
            key = session_env[variable]
        else:
            key = (os.environ if daemon_env is None else daemon_env).get(variable, "")
    defaults = ProviderSettings(kind=kind, provider=provider, model=name,
                                base_url=session_base_url or table.base_url
                                or DEFAULT_BASE_URLS[kind])
    return msgspec.structs.replace(
        defaults, api_key=key.strip(), api_key_env=variable or "",
        max_response_bytes=table.max_response_bytes or defaults.max_response_bytes,
        max_retries=defaults.max_retries if table.max_retries is None else table.max_retries,
        timeout=table.timeout or defaults.timeout)


def key_warnings(settings: ProviderSettings) -> list[SessionWarning]:
    """``native.auth.missing_key`` for ``settings`` without a key, as ``session.create`` warns.

    At the vendor's public endpoint every turn will fail (the worker sends nothing without a
    key); at a ``base_url`` of the user's the requests go without one, which a local server may
    well accept, so a provider that names no key variable there gets no warning.
    """
    if settings.api_key:
        return []
    public = settings.base_url.rstrip("/") == DEFAULT_BASE_URLS[settings.kind]
    variable = settings.api_key_env
    if variable and public:
        message = (f"{variable} is not set: {settings.spec} has no API key and its turns will "
                   f"fail (set {variable} in the daemon's environment or the session's env)")
    elif variable:
        message = (f"{variable} is not set: requests to {settings.base_url} go without an "
                   "API key")
    elif public:
        message = (f"[providers.{settings.provider}] names no api_key_env: {settings.spec} has "
                   f"no API key for {settings.base_url} and its turns will fail")
    else:
        return []
    return [SessionWarning(code="native.auth.missing_key", message=message,
                           variable=variable or None)]



def user_prices_path(environ: Mapping[str, str] | None = None) -> Path:
    """``prices.toml`` beside the default configuration file (``~/.config/corral/``)."""
    return default_config_path(environ).with_name("prices.toml")


def load_prices(paths: Sequence[Traversable | Path] = (PRICES_FILE,)
                ) -> tuple[dict[str, Price], list[str]]:
    """The price tables at ``paths``, a later one's model replacing an earlier one's (a missing
    file adds nothing), and a warning per bad entry or unreadable file. Blocking (reads files)."""
    prices: dict[str, Price] = {}
    warnings: list[str] = []
    for path in paths:
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            warnings.append(f"price table {path} is unreadable and ignored: {exc}")
            continue
        for model, entry in table.items():
            try:
                prices[model] = msgspec.convert(entry, Price)
            except msgspec.ValidationError as exc:
                warnings.append(f"price of {model!r} in {path} ignored: {exc}")
    return prices, warnings


def _builtin(provider: str) -> ProviderKind | None:
    return next((kind for kind in KINDS if kind == provider), None)
