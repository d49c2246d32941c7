"""The ``start`` frame carries the ``[native]`` context settings and ``options.tools``."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app import Config
from actors.harnesses import drivers
from actors.native.daemon.config import NativeConfig
from actors.native.daemon.driver import NativeDriver
from protocol.errors import BadRequest
from protocol.native import Start
from protocol.native_context import ContextSettings
from supervisor.config import parse_config

from .test_translate import _commands, _request


def _start(tmp_path: Path, driver: NativeDriver, **fields: object) -> Start:
    translator = driver.translator(_request(tmp_path, **fields))
    (start,) = _commands(translator.start(0))
    assert isinstance(start, Start)
    return start


def test_native_section_reaches_the_start_frame_with_home_expanded(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    loaded = parse_config(Config, '[native]\nmax_bytes = 999\nskill_roots = ["~/skills"]\n'
                                  'instructions = false\n', source="<t>")
    assert loaded.warnings == []
    driver = drivers(loaded.config)["native"]
    start = _start(tmp_path, driver)
    assert start.context == ContextSettings(max_bytes=999, instructions=False,
                                            skill_roots=[str(tmp_path / "h" / "skills")])
    assert parse_config(Config, "[native]\nmax_byte = 1\n", source="<t>").warnings == [
        "unknown key 'native.max_byte' ignored"]
    assert NativeConfig().context() == ContextSettings()


def test_options_tools_is_the_active_tool_set(tmp_path: Path) -> None:
    driver = NativeDriver()
    assert _start(tmp_path, driver).tools is None
    assert _start(tmp_path, driver, options={"tools": ["read", "ls"]}).tools == ["read", "ls"]
    for bad in ("read", [1], [""], {"read": True}):
        with pytest.raises(BadRequest, match="options.tools"):
            _start(tmp_path, driver, options={"tools": bad})
