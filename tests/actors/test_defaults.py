"""``corral defaults NAME``: the files shipped as package data, printed byte for byte without a
daemon (that they are the bytes of ``config/`` is tests/actors/test_config.py's business)."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors import defaults
from actors.app import main

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("what", sorted(defaults.FILES))
def test_defaults_prints_the_shipped_file(what: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["defaults", what]) == 0
    out = capsys.readouterr().out
    assert out == (REPO / "config" / defaults.FILES[what]).read_text(encoding="utf-8")
    assert out == defaults.read(defaults.FILES[what])


def test_an_unknown_default_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["defaults", "colours"])
    assert exit.value.code == 2
    assert "invalid choice: 'colours'" in capsys.readouterr().err
