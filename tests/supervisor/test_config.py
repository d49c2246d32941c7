"""The generic config loader on a root Struct of its own: paths, file and TOML errors, warnings.

The application's own sections and ``config/`` are tested in ``tests/actors/test_config.py``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import pytest
from msgspec import Meta, Struct

from protocol.errors import ConfigInvalid, ErrorCode
from supervisor.config import LoadedConfig, config_schema, default_config_path, load_config, parse_config


class Inner(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A section."""

    count: Annotated[int, Meta(ge=0)] = 1
    ratio: Annotated[float, Meta(ge=0, le=1)] = 0.5
    delay: Annotated[float, Meta(ge=0)] = 1.0
    mode: Literal["a", "b"] = "a"
    tags: list[Annotated[str, Meta(pattern="^t-[0-9]+$", description="a tag such as t-1")]] = []


class Checked(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A section with a warning of its own about a value it accepts."""

    value: int = 0

    def config_warnings(self) -> list[tuple[str, str]]:
        return [("value", f"is {self.value}, an odd choice")] if self.value % 2 else []


class Hook(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A table of an array of tables, which refuses some values as a whole."""

    name: str
    weight: Annotated[int, Meta(ge=0)] = 1

    def __post_init__(self) -> None:
        if self.name == "bad":
            raise ValueError("name 'bad' is refused")


class Root(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole file."""

    inner: Inner = Inner()
    checked: Checked = Checked()
    tables: dict[str, Inner] = {}
    env: dict[str, str] = {}
    hooks: list[Hook] = []


def parse(text: str) -> LoadedConfig[Root]:
    return parse_config(Root, text)


def test_each_table_of_an_array_of_tables_is_decoded_and_dropped_alone() -> None:
    loaded = parse("""
hooks = [{ name = "a" }, { name = "bad" }, { weight = 2 }, 3,
         { name = "b", weight = -1, colour = "red" }, { name = "c", weight = 5 }]
""")
    assert loaded.config.hooks == [Hook(name="a"), Hook(name="b"), Hook(name="c", weight=5)]
    assert loaded.warnings == [
        "bad value for 'hooks[1]': name 'bad' is refused; entry ignored",
        "bad value for 'hooks[2]': Missing required argument 'name'; entry ignored",
        "bad value for 'hooks[3]': expected a table, got int; entry ignored",
        "bad value for 'hooks[4].weight': expected int >= 0, got -1; using default 1",
        "unknown key 'hooks[4].colour' ignored",
    ]


# --- paths and files ----------------------------------------------------------------------------


def test_no_file_at_the_default_path_gives_defaults_without_warnings(tmp_path: Path) -> None:
    loaded = load_config(Root, environ={"XDG_CONFIG_HOME": str(tmp_path / "nothing-here")})
    assert loaded == LoadedConfig(Root(), None, [])


def test_default_path_prefers_xdg_config_home(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}
    assert default_config_path(env) == tmp_path / "xdg" / "corral" / "config.toml"


@pytest.mark.parametrize("xdg", [None, "", "relative/dir"])
def test_default_path_falls_back_to_home_dot_config(tmp_path: Path, xdg: str | None) -> None:
    env = {"HOME": str(tmp_path)}
    if xdg is not None:
        env["XDG_CONFIG_HOME"] = xdg
    assert default_config_path(env) == tmp_path / ".config" / "corral" / "config.toml"


@pytest.mark.parametrize("xdg", [True, False])
def test_the_file_at_the_default_path_is_loaded(tmp_path: Path, xdg: bool) -> None:
    base = tmp_path / "xdg" if xdg else tmp_path / ".config"
    file = base / "corral" / "config.toml"
    file.parent.mkdir(parents=True)
    file.write_text("[inner]\ncount = 9\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")} if xdg else {"HOME": str(tmp_path)}
    assert load_config(Root, environ=env) == LoadedConfig(Root(inner=Inner(count=9)), file, [])


def test_explicit_path_wins_over_the_default_path(tmp_path: Path) -> None:
    default = tmp_path / "xdg" / "corral" / "config.toml"
    default.parent.mkdir(parents=True)
    default.write_text("[inner]\ncount = 1111\n")
    explicit = tmp_path / "mine.toml"
    explicit.write_text("[inner]\ncount = 2222\n")
    loaded = load_config(Root, explicit, environ={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert loaded.config.inner.count == 2222
    assert loaded.source == explicit


def test_explicit_path_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(ConfigInvalid) as info:
        load_config(Root, missing)
    assert str(missing) in info.value.message
    assert info.value.code == ErrorCode.CONFIG_INVALID


def test_unreadable_config_is_an_error_naming_the_file(tmp_path: Path) -> None:
    file = tmp_path / "xdg" / "corral" / "config.toml"
    file.mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(ConfigInvalid, match="cannot read config file") as info:
        load_config(Root, environ={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert str(file) in info.value.message


def test_config_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    file = tmp_path / "latin1.toml"
    file.write_bytes(b'[inner]\nmode = "caf\xe9"\n')
    with pytest.raises(ConfigInvalid, match="cannot read config file"):
        load_config(Root, file)


def test_malformed_toml_error_names_the_file_and_line(tmp_path: Path) -> None:
    file = tmp_path / "bad.toml"
    file.write_text("[inner]\ncount = 1\nmode = \n")
    with pytest.raises(ConfigInvalid) as info:
        load_config(Root, file)
    assert str(file) in info.value.message
    assert "(at line 3, column 8)" in info.value.message
    assert isinstance(info.value.__cause__, tomllib.TOMLDecodeError)


def test_duplicate_key_is_malformed_toml() -> None:
    with pytest.raises(ConfigInvalid, match=r"<string>: .*\(at line 3"):
        parse("[inner]\ncount = 1\ncount = 2\n")


# --- warnings ------------------------------------------------------------------------------------


def test_unknown_keys_are_warned_by_name_and_the_rest_loads() -> None:
    loaded = parse("colour = 1\n[inner]\ncount = 3\ncuont = 4\n[tables.x]\nmood = 'a'\n")
    assert loaded.warnings == [
        "unknown key 'colour' ignored",
        "unknown key 'inner.cuont' ignored",
        "unknown key 'tables.x.mood' ignored",
    ]
    assert loaded.config == Root(inner=Inner(count=3), tables={"x": Inner()})


@pytest.mark.parametrize(
    ("toml", "warning"),
    [
        ("[inner]\ncount = 'x'", "bad value for 'inner.count': expected int, got str; using default 1"),
        ("[inner]\ncount = -1", "bad value for 'inner.count': expected int >= 0, got -1; using default 1"),
        ("[inner]\nratio = 2", "bad value for 'inner.ratio': expected float <= 1.0, got 2; using default 0.5"),
        ("[inner]\ndelay = inf", "bad value for 'inner.delay': expected a finite number, got inf; using default 1.0"),
        ("[inner]\nmode = 'c'", 'bad value for \'inner.mode\': expected one of "a", "b", got "c"; using default "a"'),
        ("[inner]\ntags = ['t-1', 2]", "bad value for 'inner.tags[1]': expected str, got int; using default []"),
        ("[inner]\ntags = ['t-1', 'x']",
         "bad value for 'inner.tags[1]': expected a tag such as t-1, got \"x\"; using default []"),
        ("inner = 5", "bad value for 'inner': expected a table, got int; using defaults"),
        ("[tables]\nx = 'y'", "bad value for 'tables.x': expected a table, got str; entry ignored"),
        ("[env]\nGOOD = 'yes'\nBAD = 1", "bad value for 'env.BAD': expected str, got int; entry ignored"),
    ],
)
def test_bad_values_are_warned_by_name_and_defaulted(toml: str, warning: str) -> None:
    loaded = parse(toml)
    assert loaded.warnings == [warning]
    assert loaded.config.inner == Inner()
    assert loaded.config.env in ({}, {"GOOD": "yes"})


def test_a_section_adds_its_own_warnings_named_by_the_loader() -> None:
    assert parse("[checked]\nvalue = 2\n").warnings == []
    loaded = parse("[checked]\nvalue = 3\n")
    assert loaded.config.checked == Checked(value=3)
    assert loaded.warnings == ["'checked.value' is 3, an odd choice"]


def test_the_schema_is_the_root_structs() -> None:
    schema = config_schema(Root)
    assert schema["$ref"] == "#/$defs/Root" and schema["$id"] == "urn:corral:config"
    assert schema["$defs"] == msgspec.json.schema(Root)["$defs"]
