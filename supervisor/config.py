"""The configuration loader, generic: TOML into any root msgspec Struct, with named warnings.

Each section's schema lives with its owner (``[daemon]`` in ``supervisor.server.config``,
``[children]`` in ``supervisor.proc.config``, the application's sections and its root Struct
in ``actors``); this module knows none of them. Structs whose defaults are the whole default
config mean no file is needed to run; the range rules are ``Meta`` constraints on each section's
field types. A TOML file only overrides keys. It is read from
``--config FILE`` or else from ``$XDG_CONFIG_HOME/corral/config.toml`` (``~/.config/...``
when ``XDG_CONFIG_HOME`` is unset) if that file exists.

A config file must never stop the daemon over one mistake, and must never let a mistake pass
silently. So the loader walks the TOML tables against the Struct fields and decodes each value on
its own with ``msgspec.convert``: an unknown key, a value of the wrong type or one outside its
range (``Meta`` constraints on the field types are the range rules; a pattern's ``description``
words its warning) gives a warning that names the key, and that key keeps its default while the
rest loads. A section may add warnings of its own about values it accepts (``SelfChecked``).
Only a file that is not TOML at all (or cannot be read) is an error, ``ConfigInvalid``, whose
message keeps tomllib's "(at line N, column M)".
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import (
    Any,
    Generic,
    Literal,
    NamedTuple,
    Protocol,
    TypeVar,
    get_args,
    get_origin,
    runtime_checkable,
)

import msgspec
from msgspec import Meta, Struct

from protocol.errors import ConfigInvalid


__all__ = [
    "LoadedConfig",
    "SelfChecked",
    "config_schema",
    "default_config_path",
    "load_config",
    "parse_config",
]

C = TypeVar("C", bound=Struct)


class LoadedConfig(Struct, Generic[C], frozen=True):
    """A decoded configuration, the file it came from (None: defaults only), and its warnings."""

    config: C
    source: Path | None
    warnings: list[str]


@runtime_checkable
class SelfChecked(Protocol):
    """A section with warnings of its own about values it accepts (a host beyond loopback)."""

    def config_warnings(self) -> list[tuple[str, str]]:
        """``(key, complaint)`` pairs; the loader words them as ``'section.key' complaint``."""
        ...


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
    root: type[C],
    path: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig[C]:
    """Load ``path`` (the ``--config`` argument) or else the default path, if that file exists.

    ``root`` is the Struct of the whole file; ``root()`` is what no file gives. Blocking (it
    reads a file). Raises ``ConfigInvalid`` naming the file when an explicit path does not
    exist, when a file cannot be read or is not UTF-8, or when it is not TOML (the message
    keeps the line).
    """
    explicit = path is not None
    file = Path(path) if path is not None else default_config_path(environ)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            message = f"config file not found: {file}"
            raise ConfigInvalid(message, data={"path": str(file)}) from None
        return LoadedConfig(root(), None, [])
    except (OSError, UnicodeDecodeError) as exc:
        message = f"cannot read config file {file}: {exc}"
        raise ConfigInvalid(message, data={"path": str(file)}) from exc
    loaded = parse_config(root, text, source=str(file))
    return LoadedConfig(loaded.config, file, loaded.warnings)


def parse_config(root: type[C], text: str, *, source: str = "<string>") -> LoadedConfig[C]:
    """Decode TOML ``text`` as ``root``; ``source`` names it in a ``ConfigInvalid`` for bad TOML."""
    import tomllib  # here: a daemon started without a configuration file never reads TOML

    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigInvalid(f"{source}: invalid TOML: {exc}", data={"path": source}) from exc
    warnings: list[str] = []
    config = _decode_struct(root, table, "", warnings)
    return LoadedConfig(config, None, warnings)


def config_schema(root: type[Struct]) -> dict[str, Any]:
    """The JSON Schema of a config file whose root is ``root`` (for ``config/schema.json``)."""
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:corral:config",
        "title": "corral configuration",
        **msgspec.json.schema(root),
    }
    return schema


def _decode_struct(
    cls: type[C], table: Mapping[str, Any], prefix: str, warnings: list[str]
) -> C:
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
    section = cls(**values)
    checked: object = section  # mypy cannot intersect a Struct with a Protocol
    if isinstance(checked, SelfChecked):
        warnings += [f"'{prefix}{key}' {complaint}" for key, complaint in checked.config_warnings()]
    return section


def _decode_field(tp: Any, raw: Any, name: str, warnings: list[str]) -> Any:
    """One key's value, or ``_Invalid``: sections and dict tables are walked, the rest converted.

    In a ``dict`` table (``[harness.*]``, ``env``) each entry is a key of its own: a bad entry is
    dropped with a warning and the others are kept. So is each table of an array of tables
    (``[[notify]]``); one its Struct refuses as a whole (``__post_init__``) is dropped too.
    """
    section = _struct_type(tp)
    entries = _dict_value_type(tp)
    tables = _list_struct_type(tp)
    if tables is not None and isinstance(raw, list):
        return _decode_tables(tables, raw, name, warnings)
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


def _decode_tables(cls: type[Struct], raw: list[Any], name: str, warnings: list[str]) -> list[Any]:
    out: list[Any] = []
    for index, item in enumerate(raw):
        where = f"{name}[{index}]"
        if not isinstance(item, dict):
            warnings.append(f"bad value for '{where}': expected a table, got {_type_name(item)}; "
                            "entry ignored")
            continue
        try:
            out.append(_decode_struct(cls, item, f"{where}.", warnings))
        except (ValueError, TypeError, ConfigInvalid) as exc:
            reason = exc.message if isinstance(exc, ConfigInvalid) else str(exc)
            warnings.append(f"bad value for '{where}': {reason}; entry ignored")
    return out


def _convert(tp: Any, raw: Any) -> Any:
    """``raw`` as ``tp`` (checking its ``Meta`` range), or ``_Invalid`` saying why not."""
    try:
        value = msgspec.convert(raw, tp)
    except msgspec.ValidationError as exc:
        where, reason = _reword(str(exc), dict(_pattern_hints(tp)))
        if get_origin(tp) is Literal:
            choices = ", ".join(_show(arg) for arg in get_args(tp))
            return _Invalid(where, f"expected one of {choices}, got {_show(raw)}")
        if ", got " not in reason:
            reason = f"{reason}, got {_show(_element(raw, where))}"
        return _Invalid(where, reason)
    if isinstance(value, float) and not math.isfinite(value):
        return _Invalid("", f"expected a finite number, got {value}")
    return value


class _Invalid(NamedTuple):
    where: str  # the path inside the value, as "[1]"; "" for the value itself
    reason: str


_PATH = re.compile(r" - at `\$(.*)`$")


def _struct_type(tp: Any) -> type[Struct] | None:
    return tp if isinstance(tp, type) and issubclass(tp, Struct) else None


def _list_struct_type(tp: Any) -> type[Struct] | None:
    return _struct_type(get_args(tp)[0]) if get_origin(tp) is list else None


def _dict_value_type(tp: Any) -> Any:
    return get_args(tp)[1] if get_origin(tp) is dict else None


def _pattern_hints(tp: Any) -> Iterator[tuple[str, str]]:
    """``(pattern, description)`` of every ``Meta`` in ``tp`` that has both."""
    for arg in get_args(tp):
        if isinstance(arg, Meta):
            if arg.pattern is not None and arg.description is not None:
                yield arg.pattern, arg.description
        else:
            yield from _pattern_hints(arg)


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return field.default


def _element(value: Any, where: str) -> Any:
    """The part of ``value`` at a msgspec path such as "[1]" (the only paths our types make)."""
    for index in re.findall(r"\[(\d+)\]", where):
        value = value[int(index)]
    return value


def _reword(message: str, hints: Mapping[str, str]) -> tuple[str, str]:
    """msgspec's "Expected `int`, got `str` - at `$[1]`" as ("[1]", "expected int, got str")."""
    where = ""
    match = _PATH.search(message)
    if match:
        where = match.group(1)
        message = message[: match.start()]
    for pattern, hint in hints.items():
        message = message.replace(f"`str` matching regex {pattern!r}", hint)
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
