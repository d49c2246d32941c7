"""The daemon's configuration: msgspec Structs whose defaults are the whole default config.

No file is needed to run: ``Config()`` is the documented default (``config/corral.toml`` spells it
out, and a test keeps the two in sync). A TOML file only overrides keys. It is read from
``--config FILE`` or else from ``$XDG_CONFIG_HOME/corral/config.toml`` (``~/.config/...`` when
``XDG_CONFIG_HOME`` is unset) if that file exists.

A config file must never stop the daemon over one mistake, and must never let a mistake pass
silently. So the loader walks the TOML tables against the Struct fields and decodes each value on
its own with ``msgspec.convert``: an unknown key, a value of the wrong type or one outside its
range (the ``Meta`` constraints on the field types below are the range rules) gives a warning that
names the key, and that key keeps its default while the rest loads. Only a file that is not TOML
at all (or cannot be read) is an error, ``ConfigInvalid``, whose message keeps tomllib's
"(at line N, column M)".
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, TypeVar, get_args, get_origin

import msgspec
from msgspec import Meta, Struct

from protocol.errors import ConfigInvalid

__all__ = [
    "ChildrenConfig",
    "Config",
    "DaemonConfig",
    "Durability",
    "HarnessConfig",
    "LoadedConfig",
    "SessionsConfig",
    "config_schema",
    "default_config_path",
    "load_config",
    "parse_config",
]

# The range rules, as data: msgspec checks them in ``convert`` and words the message.
_Port = Annotated[int, Meta(ge=0, le=65535)]
_Host = Annotated[str, Meta(min_length=1)]
# An Origin header value is scheme://host[:port], with no path and no trailing slash.
_ORIGIN_PATTERN = "^[A-Za-z][A-Za-z0-9+.-]*://[^/ ]+$"
_Origin = Annotated[str, Meta(pattern=_ORIGIN_PATTERN)]
_Bytes = Annotated[int, Meta(ge=1024)]
_Count = Annotated[int, Meta(ge=0)]
_Capacity = Annotated[int, Meta(ge=1)]
_Seconds = Annotated[float, Meta(ge=0)]
_PositiveSeconds = Annotated[float, Meta(gt=0)]
_Factor = Annotated[float, Meta(ge=1)]
_Fraction = Annotated[float, Meta(ge=0, le=1)]

_S = TypeVar("_S", bound=Struct)

Durability = Literal["turn", "event", "none"]
"""When a session's event log is fsynced: at each turn's end, after every event, or never."""


class DaemonConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[daemon]``: the websocket listener and the daemon's own lifetime."""

    port: _Port = 7433  # 0 asks the OS for a free port
    host: _Host = "127.0.0.1"  # a non-loopback host is allowed, with a warning
    allowed_origins: list[_Origin] = []  # beyond the daemon's own http://127.0.0.1:PORT, localhost
    frame_limit: _Bytes = 16 * 1024 * 1024
    handshake_timeout: _PositiveSeconds = 10.0
    client_queue: _Capacity = 1024  # outgoing frames per connection before `lagged`
    shutdown_timeout: _Seconds = 30.0  # bound on the whole graceful shutdown


class SessionsConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[sessions]``: restarts, timeouts and durability of every session actor."""

    restart_intensity: _Count = 3  # at most this many restarts ...
    restart_period: _PositiveSeconds = 60.0  # ... within this many seconds
    backoff_initial: _Seconds = 0.5
    backoff_factor: _Factor = 2.0
    backoff_max: _Seconds = 30.0
    backoff_jitter: _Fraction = 0.2  # each later delay is scaled by a random factor in [1, 1+j]
    close_timeout: _Seconds = 10.0  # bound on a harness's close sequence
    permission_timeout: _PositiveSeconds = 600.0  # an open permission is then denied ("timeout")
    stall_threshold: _PositiveSeconds = 300.0
    durability: Durability = "turn"
    fsync_interval: _Seconds = 0.1
    inbox_size: _Capacity = 256
    memory_tail: _Count = 2048  # events kept in memory per session for fast replay
    resume_on_boot: bool = False  # resume the sessions the last daemon closed as it stopped or crashed


class ChildrenConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[children]``: limits on every OS-process child's output."""

    stderr_lines: _Count = 200  # last stderr lines kept for error reports
    frame_limit: _Bytes = 16 * 1024 * 1024


class HarnessConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A ``[harness.<name>]`` table: how to launch one harness (paths are used as written)."""

    binary: str | None = None  # None: found on PATH
    extra_args: list[str] = []
    home: str | None = None  # None: the user's own home
    env: dict[str, str] = {}


class Config(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole configuration; ``Config()`` is the default that runs with no file at all.

    ``providers`` holds the ``[providers.NAME]`` tables of the native harness as read; the
    application decodes them (``actors.native.config``), since this runtime knows no harness.
    """

    daemon: DaemonConfig = DaemonConfig()
    sessions: SessionsConfig = SessionsConfig()
    children: ChildrenConfig = ChildrenConfig()
    harness: dict[str, HarnessConfig] = {}
    providers: dict[str, dict[str, Any]] = {}


class LoadedConfig(Struct, frozen=True):
    """A decoded configuration, the file it came from (None: defaults only), and its warnings."""

    config: Config
    source: Path | None
    warnings: list[str]


def harness_defaults(config: Config, harness: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The session options and env that ``[harness.<name>]`` gives every session of a harness.

    A session's own ``options`` and ``env`` win over these; ``~`` in paths is expanded.
    """
    table = config.harness.get(harness)
    if table is None:
        return {}, {}
    options: dict[str, Any] = {}
    if table.binary:
        options["binary"] = os.path.expanduser(table.binary)
    if table.home:
        options["home"] = os.path.expanduser(table.home)
    if table.extra_args:
        options["extra_args"] = list(table.extra_args)
    return options, dict(table.env)


def default_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/corral/config.toml``, else ``$HOME/.config/corral/config.toml``.

    A relative ``XDG_CONFIG_HOME`` is ignored, as the XDG spec says. ``environ`` defaults to
    ``os.environ``; without ``HOME`` in it, the home comes from ``Path.home()``.
    """
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    else:
        home = env.get("HOME")
        base = (Path(home) if home else Path.home()) / ".config"
    return base / "corral" / "config.toml"


def load_config(
    path: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None
) -> LoadedConfig:
    """Load ``path`` (the ``--config`` argument) or else the default path, if that file exists.

    Raises ``ConfigInvalid`` naming the file when an explicit path does not exist, when a file
    cannot be read or is not UTF-8, or when it is not TOML (the message keeps the line).
    """
    explicit = path is not None
    file = Path(path) if path is not None else default_config_path(environ)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            message = f"config file not found: {file}"
            raise ConfigInvalid(message, data={"path": str(file)}) from None
        return LoadedConfig(Config(), None, [])
    except (OSError, UnicodeDecodeError) as exc:
        message = f"cannot read config file {file}: {exc}"
        raise ConfigInvalid(message, data={"path": str(file)}) from exc
    loaded = parse_config(text, source=str(file))
    return LoadedConfig(loaded.config, file, loaded.warnings)


def parse_config(text: str, *, source: str = "<string>") -> LoadedConfig:
    """Decode TOML ``text``; ``source`` names it in the ``ConfigInvalid`` raised for bad TOML."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigInvalid(f"{source}: invalid TOML: {exc}", data={"path": source}) from exc
    warnings: list[str] = []
    config = _decode_struct(Config, table, "", warnings)
    _check_host(config.daemon.host, warnings)
    return LoadedConfig(config, None, warnings)


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the config file (``config/schema.json``), for editors that check TOML."""
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:corral:config",
        "title": "corral configuration",
        **msgspec.json.schema(Config),
    }
    return schema


def _decode_struct(
    cls: type[_S], table: Mapping[str, Any], prefix: str, warnings: list[str]
) -> _S:
    """Build ``cls`` from ``table`` key by key; every problem becomes a warning and a default."""
    fields = {f.encode_name: f for f in msgspec.structs.fields(cls)}
    values: dict[str, Any] = {}
    for key, raw in table.items():
        name = f"{prefix}{key}"
        field = fields.get(key)
        if field is None:
            warnings.append(f"unknown key {name!r} ignored")
            continue
        value = _decode_field(field.type, raw, name, warnings)
        if isinstance(value, _Invalid):
            default = _default(field)
            fallback = "defaults" if isinstance(default, Struct) else f"default {_show(default)}"
            warnings.append(
                f"bad value for '{name}{value.where}': {value.reason}; using {fallback}"
            )
        else:
            values[field.name] = value
    return cls(**values)


def _decode_field(tp: Any, raw: Any, name: str, warnings: list[str]) -> Any:
    """One key's value, or ``_Invalid``: sections and dict tables are walked, the rest converted.

    In a ``dict`` table (``[harness.*]``, ``env``) each entry is a key of its own: a bad entry is
    dropped with a warning and the others are kept.
    """
    section = _struct_type(tp)
    entries = _dict_value_type(tp)
    if section is None and entries is None:
        return _convert(tp, raw)
    if not isinstance(raw, dict):
        return _Invalid("", f"expected a table, got {_type_name(raw)}")
    if section is not None:
        return _decode_struct(section, raw, f"{name}.", warnings)
    out: dict[str, Any] = {}
    for key, item in raw.items():
        value = _decode_field(entries, item, f"{name}.{key}", warnings)
        if isinstance(value, _Invalid):
            where = f"{name}.{key}{value.where}"
            warnings.append(f"bad value for '{where}': {value.reason}; entry ignored")
        else:
            out[key] = value
    return out


def _convert(tp: Any, raw: Any) -> Any:
    """``raw`` as ``tp`` (checking its ``Meta`` range), or ``_Invalid`` saying why not."""
    try:
        value = msgspec.convert(raw, tp)
    except msgspec.ValidationError as exc:
        where, reason = _reword(str(exc))
        if get_origin(tp) is Literal:
            choices = ", ".join(_show(arg) for arg in get_args(tp))
            return _Invalid(where, f"expected one of {choices}, got {_show(raw)}")
        if ", got " not in reason:
            reason = f"{reason}, got {_show(_element(raw, where))}"
        return _Invalid(where, reason)
    if isinstance(value, float) and not math.isfinite(value):
        return _Invalid("", f"expected a finite number, got {value}")
    return value


def _check_host(host: str, warnings: list[str]) -> None:
    """Listening beyond loopback is the user's call, but never a silent one."""
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    warnings.append(
        f"'daemon.host' is {host!r}, not a loopback address: other machines can reach the daemon"
    )


class _Invalid(NamedTuple):
    where: str  # the path inside the value, as "[1]"; "" for the value itself
    reason: str


_ORIGIN_HINT = "an origin such as http://localhost:3000 (no path, no trailing slash)"
_PATH = re.compile(r" - at `\$(.*)`$")


def _struct_type(tp: Any) -> type[Struct] | None:
    return tp if isinstance(tp, type) and issubclass(tp, Struct) else None


def _dict_value_type(tp: Any) -> Any:
    return get_args(tp)[1] if get_origin(tp) is dict else None


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return field.default


def _element(value: Any, where: str) -> Any:
    """The part of ``value`` at a msgspec path such as "[1]" (the only paths our types make)."""
    for index in re.findall(r"\[(\d+)\]", where):
        value = value[int(index)]
    return value


def _reword(message: str) -> tuple[str, str]:
    """msgspec's "Expected `int`, got `str` - at `$[1]`" as ("[1]", "expected int, got str")."""
    where = ""
    match = _PATH.search(message)
    if match:
        where = match.group(1)
        message = message[: match.start()]
    message = message.replace(f"`str` matching regex {_ORIGIN_PATTERN!r}", _ORIGIN_HINT)
    message = message.replace("`", "").replace(" | null", "").replace("got object", "got table")
    return where, message[:1].lower() + message[1:]


def _show(value: Any) -> str:
    """A value as TOML spells it, so a warning reads like the file."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (bool, int, float, str, list)):
        return msgspec.json.encode(value).decode()
    if isinstance(value, dict) and not value:
        return "{}"
    return _type_name(value)


def _type_name(value: Any) -> str:
    names: dict[type, str] = {list: "array", dict: "table"}
    return names.get(type(value), type(value).__name__)
