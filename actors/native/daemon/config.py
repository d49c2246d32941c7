"""The daemon side of native model configuration: ``[providers.NAME]`` tables, key warnings, prices.

The daemon resolves a session's ``PROVIDER/NAME`` into the ``ProviderSettings`` it sends the
worker in ``start`` (and ``set_model``) with ``actors.native.providers.resolve``, the one
resolver (it imports no SDK); here are the decoding of the tables, with warnings that name the
key, and the warnings of a missing key.

Prices come from the price table shipped in the package (``actors/defaults/prices.toml``, the
same bytes as the repository's ``config/prices.toml``), overlaid by ``prices.toml`` beside the
user's configuration file (``~/.config/corral/prices.toml``): ``[MODEL] input = …, output = …,
cache_read = …, cache_write = …`` in US dollars per million tokens; a model in the user's table
replaces the shipped entry. ``load_prices`` never fails: a bad entry is a warning and is left out
(its model then has ``cost_usd: null``).

The daemon imports this module at start for ``NativeConfig`` (a section of its configuration);
the resolver, the price type and the TOML reader load with the first call that needs them, when
the native driver is built.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from protocol.messages import SessionWarning
from protocol.native_context import ContextSettings
from supervisor.config import default_config_path

from actors import defaults

from ..compaction.settings import CompactionConfig

if TYPE_CHECKING:
    from protocol.native import Price, ProviderSettings

    from ..providers import ProviderTable

__all__ = [
    "PRICES_FILE",
    "NativeConfig",
    "ProvidersConfig",
    "decode_providers",
    "key_warnings",
    "load_prices",
    "user_prices_path",
]

PRICES_FILE = defaults.file(defaults.PRICES)
"""The price table shipped in the package (``config/prices.toml`` in the repository)."""


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


ProvidersConfig = dict[str, "ProviderTable"]
"""The ``[providers]`` section: provider name → its table."""


def decode_providers(raw: Mapping[str, Any]) -> tuple[ProvidersConfig, list[str]]:
    """The ``[providers]`` tables as Structs, and a warning naming each one that was dropped."""
    from ..providers import KINDS, ProviderTable

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


def key_warnings(settings: ProviderSettings) -> list[SessionWarning]:
    """``native.auth.missing_key`` for ``settings`` without a key, as ``session.create`` warns.

    At the vendor's public endpoint every turn will fail (the worker sends nothing without a
    key); at a ``base_url`` of the user's the requests go without one, which a local server may
    well accept, so a provider that names no key variable there gets no warning.
    """
    from ..providers import DEFAULT_BASE_URLS

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
    import tomllib

    from protocol.price import Price

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

