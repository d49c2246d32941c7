"""``corral run`` and ``corral probe`` in process (the model scripted): what goes to stdout and
stderr, exit codes, ``--json``, progress only on a terminal, and the provider found from the
config file with the key from the environment."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import actors.native.models as models
from actors import app
from actors.native.cli.oneshot import PING, PING_MARKER
from protocol.native import ProviderSettings
from tests.fakes.model_script import call, say
from tests.fakes.scripted_llm import ScriptedLlm


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The default config file is looked for in an empty directory, not the user's."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def script(monkeypatch: pytest.MonkeyPatch, steps: list[Any]) -> list[Any]:
    """Every model the commands build plays ``steps``; returns the configs they were built with."""
    built: list[Any] = []

    def build(config: Any) -> ScriptedLlm:
        built.append(config)
        return ScriptedLlm(steps)

    monkeypatch.setattr(models, "build_model", build)
    return built


def test_run_prints_the_answer_and_exits_0(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "corral.toml"
    config.write_text('[providers.local]\nkind = "openai-chat"\nbase_url = "http://h:1/v1"\n'
                      'api_key_env = "LOCAL_KEY"\n')
    monkeypatch.setenv("LOCAL_KEY", "k-123")
    built = script(monkeypatch, [call("ls"), say("two files")])
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    code = app.main(["run", "--model", "local/m", "--config", str(config), "--cwd",
                     str(tmp_path), "list", "files"])
    out, err = capsys.readouterr()
    assert (code, out, err) == (0, "two files\n", "")
    assert (built[0].kind, built[0].base_url, built[0].api_key) == (
        "openai-chat", "http://h:1/v1", "k-123")


def test_a_failed_run_says_its_outcome_on_stderr_and_exits_1(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    script(monkeypatch, [call("ls"), say("never")])
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code = app.main(["run", "--model", "openai/m", "--cwd", str(tmp_path),
                     "--max-model-calls", "1", "go"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == "· model call 1/1"  # progress: stderr is a terminal
    assert lines[-1] == "outcome: max_model_calls" and lines[-2].startswith("corral: ")


def test_run_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                  capsys: pytest.CaptureFixture[str]) -> None:
    script(monkeypatch, [say("done")])
    code = app.main(["run", "--json", "--model", "openai/m", "--cwd", str(tmp_path), "x"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["text"] == "done" and report["outcome"] == "ok"
    assert report["usage"]["model_calls"] == 1 and report["usage"]["input_tokens"] == 20
    code = app.main(["run", "--json", "--model", "nope", "--cwd", str(tmp_path), "x"])
    assert code == 1 and json.loads(capsys.readouterr().out)["outcome"] == "bad_request"


def test_probe(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    script(monkeypatch, [call(PING, marker=PING_MARKER)])
    assert app.main(["probe", "openai/m"]) == 0
    assert capsys.readouterr().out == "openai/m can call tools\n"
    script(monkeypatch, [say("pong")])
    assert app.main(["probe", "openai/m"]) == 1
    err = capsys.readouterr().err
    assert "outcome: tool_calling_unsupported" in err and "pong" in err


def test_settings_fields_reach_the_adapter_config() -> None:
    # the CLI converts the daemon-side settings into the adapter's config field by field
    fields = set(ProviderSettings.__struct_fields__)
    assert fields <= set(models.ProviderConfig.__struct_fields__)
