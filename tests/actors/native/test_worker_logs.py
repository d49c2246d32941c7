"""What a failed turn leaves on a real worker's stderr (which the daemon logs line by line): one
line with the failure's code, and a traceback only under ``CORRAL_DEBUG``."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.events import Error, Result
from protocol.framing import LengthPrefixFramer
from protocol.native import Prompt, ProviderSettings, Start, decode_event, encode_command
from tests.fakes.model_script import fail
from tests.fakes.model_thread import ServerThread

ROOT = Path(__file__).resolve().parents[3]
LIMIT = 120.0  # a real worker imports ADK: seconds on a loaded machine


@pytest.fixture
def srv() -> Iterator[ServerThread]:
    with ServerThread() as thread:
        yield thread


def _failed_turn(tmp_path: Path, srv: ServerThread, env: dict[str, str]) -> tuple[list[str], str]:
    """Run one turn the fake server answers 401 to; the error codes, and the worker's stderr."""
    srv.server.add(fail(401, message="no such key"))
    provider = ProviderSettings(kind="openai", provider="openai", model="m",
                                base_url=f"{srv.url}/v1", api_key="sk-test-123456")
    framer = LengthPrefixFramer()
    commands = [Start(cwd=str(tmp_path), model="openai/m", provider=provider,
                      store_dir=str(tmp_path / "store")), Prompt(text="hi")]
    stderr = tmp_path / "stderr"  # a file: a pipe nobody reads yet could fill and block it
    with stderr.open("wb") as sink, subprocess.Popen(
            [sys.executable, "-m", "actors.native"], cwd=ROOT, env={**os.environ, **env},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink) as worker:
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write(b"".join(framer.encode(encode_command(c)) for c in commands))
        worker.stdin.flush()
        codes: list[str] = []
        deadline = time.monotonic() + LIMIT
        done = False
        while not done:
            ready, _, _ = select.select([worker.stdout], [], [], deadline - time.monotonic())
            assert ready, "no result from the worker in time"
            data = os.read(worker.stdout.fileno(), 1 << 16)
            assert data, "the worker closed its stdout before the result"
            framer.receive_data(data)
            for frame in framer.frames():
                event = decode_event(frame)
                if isinstance(event, Error):
                    codes.append(event.code)
                done = done or isinstance(event, Result)
        worker.communicate(timeout=LIMIT)  # closes stdin: the worker exits 0
    err = stderr.read_text()
    assert worker.returncode == 0, err
    return codes, err


def test_a_failed_turn_is_one_log_line_with_its_code(tmp_path: Path, srv: ServerThread) -> None:
    codes, err = _failed_turn(tmp_path, srv, {"CORRAL_DEBUG": ""})
    assert codes == ["native.auth.invalid_key"]
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and "native.auth.invalid_key" in lines[0], err


def test_corral_debug_brings_the_tracebacks_back(tmp_path: Path, srv: ServerThread) -> None:
    codes, err = _failed_turn(tmp_path, srv, {"CORRAL_DEBUG": "1"})
    assert codes == ["native.auth.invalid_key"]
    assert "Traceback" in err
