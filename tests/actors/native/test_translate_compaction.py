"""``[native.compaction]`` and ``options.compaction`` reach the worker's ``start`` frame;
``compact`` is a frame of its own; a bad table is the caller's ``bad_request``."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.native.compaction import CompactionConfig
from actors.native.daemon.driver import NativeDriver
from protocol.errors import BadRequest
from protocol.native import Compact, Start
from tests.actors.native.test_translate import _commands, _ready, _request


def _start(tmp_path: Path, config: CompactionConfig | None = None, **fields: object) -> Start:
    translator = NativeDriver(compaction=config).translator(_request(tmp_path, **fields))
    outputs: list[object] = list(translator.start(0))
    (start,) = _commands(outputs)
    assert isinstance(start, Start)
    return start


def test_the_defaults_send_nothing(tmp_path: Path) -> None:
    assert _start(tmp_path).compaction == {}


def test_the_config_table_with_the_session_options_over_it(tmp_path: Path) -> None:
    config = CompactionConfig(context_tokens=1000, protected_tools=["memory"])
    start = _start(tmp_path, config, options={"compaction": {"mode": "summarize", "trigger": 0.9}})
    assert start.compaction == {
        "context_tokens": 1000, "trigger": 0.9, "target": 0.6, "keep_recent_turns": 12,
        "protected_tools": ["memory"], "mode": "summarize", "summary_retries": 2}


@pytest.mark.parametrize("bad", [{"mode": "shrink"}, {"trigger": 1.5}, {"context_tokens": -1},
                                 {"nonsense": 1}, "not a table"])
def test_a_bad_compaction_option_is_a_bad_request(tmp_path: Path, bad: object) -> None:
    with pytest.raises(BadRequest, match="compaction"):
        _start(tmp_path, options={"compaction": bad})


def test_compact_is_a_frame(tmp_path: Path) -> None:
    outputs: list[object] = list(_ready(tmp_path).compact(0))
    assert _commands(outputs) == [Compact()]
