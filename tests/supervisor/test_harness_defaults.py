"""``[harness.<name>]`` tables become every session's default options and env."""

from __future__ import annotations

import os

from supervisor.config import harness_defaults, parse_config
from actors.app import drivers


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
