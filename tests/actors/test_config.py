"""The application's configuration (``actors.app.Config``): its defaults, the warnings each section
gives, the shipped default files (``actors/defaults``, the same bytes as ``config/``) kept in sync,
and the ``[harness.*]`` defaults every session gets.

The loader itself (paths, file errors, TOML errors) is tested in ``tests/supervisor/test_config.py``.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import msgspec
import pytest

from actors import defaults
from actors.app import Config
from actors.harnesses import drivers
from actors.session.config import HarnessConfig, SessionsConfig, harness_defaults
from supervisor import config as loader
from supervisor.config import LoadedConfig, config_schema
from supervisor.proc.config import ChildrenConfig
from supervisor.server.config import DaemonConfig

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TOML = defaults.read(defaults.CONFIG)
SCHEMA_JSON = defaults.read(defaults.SCHEMA)


# --- defaults and paths ---------------------------------------------------------------------


def test_defaults_hold_the_documented_values() -> None:
    config = Config()
    assert config.daemon.port == 7433
    assert config.daemon.host == "127.0.0.1"
    assert config.daemon.frame_limit == 16 * 1024 * 1024
    assert config.sessions.durability == "turn"
    assert config.sessions.permission_timeout == 600.0
    assert config.children.frame_limit == 16 * 1024 * 1024
    assert config.harness == {}


def parse_config(text: str, *, source: str = "<string>") -> LoadedConfig[Config]:
    return loader.parse_config(Config, text, source=source)


def test_no_file_gives_the_defaults(tmp_path: Path) -> None:
    loaded = loader.load_config(Config, environ={"XDG_CONFIG_HOME": str(tmp_path / "nothing-here")})
    assert loaded == LoadedConfig(Config(), None, [])


# --- unknown keys ---------------------------------------------------------------------------


def test_unknown_keys_are_warned_by_name_and_the_rest_loads() -> None:
    loaded = parse_config(
        """
        colour = "blue"
        [daemon]
        port = 8000
        prot = 8001
        [sessions]
        foo = 1
        close_timeout = 3.0
        [extras.deep]
        x = 1
        [harness.claude]
        binary = "/bin/claude"
        bin = "/bin/claude"
        """
    )
    assert loaded.warnings == [
        "unknown key 'colour' ignored",
        "unknown key 'daemon.prot' ignored",
        "unknown key 'sessions.foo' ignored",
        "unknown key 'extras' ignored",
        "unknown key 'harness.claude.bin' ignored",
    ]
    assert loaded.config.daemon.port == 8000
    assert loaded.config.sessions.close_timeout == 3.0
    assert loaded.config.harness == {"claude": HarnessConfig(binary="/bin/claude")}


# --- bad values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "warning"),
    [
        (
            "[daemon]\nport = 'x'",
            "bad value for 'daemon.port': expected int, got str; using default 7433",
        ),
        (
            "[daemon]\nport = 7433.0",
            "bad value for 'daemon.port': expected int, got float; using default 7433",
        ),
        (
            "[children]\nstderr_lines = true",
            "bad value for 'children.stderr_lines': expected int, got bool; using default 200",
        ),
        (
            "[daemon]\nhost = 1",
            "bad value for 'daemon.host': expected str, got int; using default \"127.0.0.1\"",
        ),
        (
            "[daemon]\nallowed_origins = 'http://x'",
            "bad value for 'daemon.allowed_origins': expected array, got str; using default []",
        ),
        (
            "[daemon]\nallowed_origins = ['http://a', 2]",
            "bad value for 'daemon.allowed_origins[1]': expected str, got int; using default []",
        ),
        (
            "[sessions]\nclose_timeout = 'soon'",
            "bad value for 'sessions.close_timeout': expected float, got str; using default 10.0",
        ),
        (
            "daemon = 5",
            "bad value for 'daemon': expected a table, got int; using defaults",
        ),
        (
            "[harness]\nclaude = 'x'",
            "bad value for 'harness.claude': expected a table, got str; entry ignored",
        ),
        (
            "[harness.claude]\nextra_args = [1]",
            "bad value for 'harness.claude.extra_args[0]': expected str, got int; using default []",
        ),
    ],
)
def test_wrong_types_are_warned_by_name_and_defaulted(toml: str, warning: str) -> None:
    loaded = parse_config(toml)
    assert loaded.warnings == [warning]
    assert loaded.config.daemon == DaemonConfig()
    assert loaded.config.sessions == SessionsConfig()
    assert loaded.config.children == ChildrenConfig()


def test_a_bad_value_keeps_its_neighbours() -> None:
    loaded = parse_config("[sessions]\ninbox_size = 'big'\nmemory_tail = 10\nstall_threshold = 5\n")
    assert len(loaded.warnings) == 1
    assert loaded.config.sessions == SessionsConfig(memory_tail=10, stall_threshold=5.0)


def test_int_is_accepted_for_a_float_key() -> None:
    loaded = parse_config("[sessions]\nclose_timeout = 5\n")
    assert loaded.warnings == []
    assert loaded.config.sessions.close_timeout == 5.0
    assert isinstance(loaded.config.sessions.close_timeout, float)


def test_bad_env_entry_is_dropped_alone() -> None:
    loaded = parse_config("[harness.claude.env]\nGOOD = 'yes'\nBAD = 1\n")
    assert loaded.warnings == [
        "bad value for 'harness.claude.env.BAD': expected str, got int; entry ignored"
    ]
    assert loaded.config.harness["claude"].env == {"GOOD": "yes"}


# --- range checks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "key", "value", "reason"),
    [
        ("daemon", "port", "-1", "expected int >= 0, got -1"),
        ("daemon", "port", "65536", "expected int <= 65535, got 65536"),
        ("daemon", "host", "''", "expected str of length >= 1, got \"\""),
        ("daemon", "frame_limit", "100", "expected int >= 1024, got 100"),
        ("daemon", "handshake_timeout", "0", "expected float > 0.0, got 0"),
        ("daemon", "client_queue", "0", "expected int >= 1, got 0"),
        ("daemon", "shutdown_timeout", "-0.5", "expected float >= 0.0, got -0.5"),
        ("sessions", "restart_intensity", "-1", "expected int >= 0, got -1"),
        ("sessions", "restart_period", "0.0", "expected float > 0.0, got 0.0"),
        ("sessions", "backoff_initial", "-1.0", "expected float >= 0.0, got -1.0"),
        ("sessions", "backoff_factor", "0.5", "expected float >= 1.0, got 0.5"),
        ("sessions", "backoff_max", "-1", "expected float >= 0.0, got -1"),
        ("sessions", "backoff_jitter", "1.5", "expected float <= 1.0, got 1.5"),
        ("sessions", "backoff_jitter", "-0.1", "expected float >= 0.0, got -0.1"),
        ("sessions", "close_timeout", "-1", "expected float >= 0.0, got -1"),
        ("sessions", "permission_timeout", "-600", "expected float > 0.0, got -600"),
        ("sessions", "stall_threshold", "0", "expected float > 0.0, got 0"),
        ("sessions", "fsync_interval", "-0.1", "expected float >= 0.0, got -0.1"),
        ("sessions", "inbox_size", "0", "expected int >= 1, got 0"),
        ("sessions", "memory_tail", "-1", "expected int >= 0, got -1"),
        ("children", "stderr_lines", "-5", "expected int >= 0, got -5"),
        ("children", "frame_limit", "0", "expected int >= 1024, got 0"),
        ("sessions", "close_timeout", "inf", "expected a finite number, got inf"),
        ("sessions", "close_timeout", "nan", "expected float >= 0.0, got nan"),
        (
            "sessions",
            "durability",
            "'fast'",
            'expected one of "turn", "event", "none", got "fast"',
        ),
        (
            "daemon",
            "allowed_origins",
            "['http://localhost:3000/']",
            "expected an origin such as http://localhost:3000 (no path, no trailing slash), "
            'got "http://localhost:3000/"',
        ),
    ],
)
def test_out_of_range_values_are_warned_by_name_and_defaulted(
    section: str, key: str, value: str, reason: str
) -> None:
    loaded = parse_config(f"[{section}]\n{key} = {value}\n")
    default = msgspec.json.encode(getattr(getattr(Config(), section), key)).decode()
    if key == "allowed_origins":
        key = "allowed_origins[0]"
    expected = f"bad value for '{section}.{key}': {reason}; using default {default}"
    assert loaded.warnings == [expected]
    assert loaded.config == Config()


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ("[daemon]\nport = 0", DaemonConfig(port=0)),
        ("[daemon]\nport = 65535", DaemonConfig(port=65535)),
        ("[daemon]\nframe_limit = 1024", DaemonConfig(frame_limit=1024)),
        ("[daemon]\nshutdown_timeout = 0", DaemonConfig(shutdown_timeout=0.0)),
        (
            "[daemon]\nallowed_origins = ['http://localhost:3000', 'vscode-webview://abc']",
            DaemonConfig(allowed_origins=["http://localhost:3000", "vscode-webview://abc"]),
        ),
    ],
)
def test_values_on_the_edge_of_their_range_are_accepted(toml: str, expected: DaemonConfig) -> None:
    loaded = parse_config(toml)
    assert loaded.warnings == []
    assert loaded.config.daemon == expected


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ("restart_intensity = 0", SessionsConfig(restart_intensity=0)),
        ("backoff_jitter = 0", SessionsConfig(backoff_jitter=0.0)),
        ("backoff_jitter = 1", SessionsConfig(backoff_jitter=1.0)),
        ("backoff_factor = 1", SessionsConfig(backoff_factor=1.0)),
        ("durability = 'none'", SessionsConfig(durability="none")),
        ("durability = 'event'", SessionsConfig(durability="event")),
    ],
)
def test_session_values_on_the_edge_are_accepted(toml: str, expected: SessionsConfig) -> None:
    loaded = parse_config(f"[sessions]\n{toml}\n")
    assert loaded.warnings == []
    assert loaded.config.sessions == expected


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_hosts_give_no_warning(host: str) -> None:
    assert parse_config(f"[daemon]\nhost = '{host}'\n").warnings == []


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "myhost.example"])
def test_non_loopback_host_is_allowed_but_warned_about(host: str) -> None:
    loaded = parse_config(f"[daemon]\nhost = '{host}'\n")
    assert loaded.config.daemon.host == host
    assert len(loaded.warnings) == 1
    assert "'daemon.host'" in loaded.warnings[0]
    assert "not a loopback address" in loaded.warnings[0]


# --- the shipped default files stay in sync with the Structs and with config/ ---------------


@pytest.mark.parametrize("name", sorted(defaults.FILES.values()))
def test_config_dir_holds_the_very_bytes_the_package_ships(name: str) -> None:
    # actors/defaults/ is what the code reads (package data, in a wheel too); config/ is where a
    # reader of the repository finds them. Edit one, then: cp actors/defaults/NAME config/NAME
    # (or the other way round).
    packaged = defaults.file(name).read_bytes()
    assert (ROOT / "config" / name).read_bytes() == packaged, f"config/{name} differs"


def test_config_dir_has_nothing_the_package_does_not_ship() -> None:
    assert {p.name for p in (ROOT / "config").iterdir()} == set(defaults.FILES.values())


def test_the_packaged_files_are_package_data_in_pyproject() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = data["tool"]["setuptools"]["package-data"]["actors.defaults"]
    shipped = {p.name for p in (ROOT / "actors" / "defaults").iterdir()
               if any(p.match(pattern) for pattern in patterns)}
    assert shipped == set(defaults.FILES.values())


def test_default_file_is_exactly_the_defaults() -> None:
    loaded = parse_config(DEFAULT_TOML, source=defaults.CONFIG)
    assert loaded.warnings == []
    assert loaded.config == Config()
    # Every key is written out (not left to its default) and nothing else is.
    written = tomllib.loads(DEFAULT_TOML)
    assert written == msgspec.to_builtins(Config())


def test_every_key_in_the_default_file_is_documented() -> None:
    undocumented = []
    previous = ""
    for line in DEFAULT_TOML.splitlines():
        if line and not line.startswith(("#", "[")) and not previous.startswith("#"):
            undocumented.append(line)
        if line:
            previous = line
    assert undocumented == []


def test_default_file_harness_example_loads_cleanly_when_uncommented() -> None:
    lines = DEFAULT_TOML.splitlines()
    start = lines.index("# [harness.claude]")
    example = []
    for line in lines[start:]:
        if not line.startswith("# "):
            break
        example.append(line[2:])
    loaded = parse_config("\n".join(example))
    assert loaded.warnings == []
    claude = loaded.config.harness["claude"]
    assert claude.binary is not None
    assert claude.extra_args
    assert claude.home is not None
    assert claude.env
    assert set(msgspec.structs.asdict(claude)) == {
        f.name for f in msgspec.structs.fields(HarnessConfig)
    }


def test_schema_file_is_in_sync() -> None:
    # Regenerate with: python -c 'import json; from supervisor.config import config_schema;
    #   from actors.app import Config; print(json.dumps(config_schema(Config), indent=2))'
    #   > actors/defaults/schema.json && cp actors/defaults/schema.json config/
    assert json.loads(SCHEMA_JSON) == config_schema(Config)


# --- [harness.*] ------------------------------------------------------------------------------


def test_harness_table_becomes_defaults() -> None:
    loaded = parse_config(
        '[harness.codex]\nbinary = "~/bin/codex"\nhome = "/h"\nextra_args = ["-c", "x=1"]\n'
        '[harness.codex.env]\nOPENAI_BASE_URL = "http://127.0.0.1:9"\n'
    )
    options, env = harness_defaults(loaded.config, "codex")
    assert options == {"binary": os.path.expanduser("~/bin/codex"), "home": "/h",
                       "extra_args": ["-c", "x=1"]}
    assert env == {"OPENAI_BASE_URL": "http://127.0.0.1:9"}
    assert harness_defaults(loaded.config, "claude") == ({}, {})


def test_every_harness_is_offered() -> None:
    assert {"fake", "claude", "codex"} <= set(drivers(parse_config("").config))
