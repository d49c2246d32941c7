"""``corral run`` failing as a real process: its own lines on stderr and nothing of ADK's or the
SDKs' (their tracebacks ran to ~330 lines), unless ``--debug``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LIMIT = 120  # a fresh Python that imports ADK, on a loaded machine


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("OPENAI_API_KEY", "CORRAL_DEBUG")}
    environ.update(PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(tmp_path / "xdg"), **(env or {}))
    done = subprocess.run([sys.executable, "-m", "actors.app", "run", "--cwd", str(tmp_path),
                           *args, "hi"], capture_output=True, env=environ, cwd=ROOT,
                          timeout=LIMIT, check=False)
    assert done.stdout == b""
    return done.returncode, done.stderr.decode().splitlines()


def test_no_key_for_the_public_endpoint_says_which_variable(tmp_path: Path) -> None:
    # Without the key nothing is sent: the same answer with or without a network.
    code, lines = _run(tmp_path, "--model", "openai/gpt-5-mini")
    assert code == 1
    assert len(lines) == 2 and lines[1] == "outcome: model_error", lines
    assert lines[0].startswith("corral: native.auth.missing_key: ") and "OPENAI_API_KEY" in lines[0]


def _unreachable(tmp_path: Path) -> Path:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "corral.toml"
    config.write_text(f'[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:{port}/v1"\n')
    return config


def test_an_unreachable_endpoint_is_one_line_without_tracebacks(tmp_path: Path) -> None:
    code, lines = _run(tmp_path, "--model", "local/m", "--config", str(_unreachable(tmp_path)))
    assert code == 1
    assert len(lines) == 2 and lines[1] == "outcome: model_error", lines
    assert lines[0].startswith("corral: native.network.unreachable: ")


def test_debug_shows_the_tracebacks(tmp_path: Path) -> None:
    config = str(_unreachable(tmp_path))
    for switch, env in ((["--debug"], None), ([], {"CORRAL_DEBUG": "1"})):
        code, lines = _run(tmp_path, *switch, "--model", "local/m", "--config", config, env=env)
        assert code == 1 and lines[-1] == "outcome: model_error"
        assert any(line.startswith("Traceback") for line in lines), lines
