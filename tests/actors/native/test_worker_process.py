"""``python -m actors.native`` as a process: whole frames only on stdout, and its exit statuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from protocol.events import Error, Event, Init
from protocol.framing import LengthPrefixFramer
from protocol.native import Shutdown, Start, decode_event, encode_command

from .workerkit import settings

ROOT = Path(__file__).resolve().parents[3]


def _worker(*commands: object) -> tuple[int, list[Event], str]:
    framer = LengthPrefixFramer()
    stdin = b"".join(framer.encode(encode_command(c)) for c in commands)  # type: ignore[arg-type]
    done = subprocess.run([sys.executable, "-m", "actors.native"], input=stdin,
                          capture_output=True, cwd=ROOT, timeout=120)
    reader = LengthPrefixFramer()
    reader.receive_data(done.stdout)
    reader.eof()  # stdout holds whole frames and nothing else
    return done.returncode, [decode_event(f) for f in reader.frames()], done.stderr.decode()


def test_a_started_worker_sends_init_and_exits_0_on_shutdown(tmp_path: Path) -> None:
    start = Start(cwd=str(tmp_path), model="openai/gpt-5-mini", provider=settings("openai/gpt-5-mini"),
                  store_dir=str(tmp_path / "store"))
    code, events, _ = _worker(start, Shutdown())
    assert code == 0
    assert [type(e) for e in events] == [Init]
    assert isinstance(events[0], Init) and events[0].model == "openai/gpt-5-mini"


def test_a_start_that_fails_is_an_error_event_and_exit_2(tmp_path: Path) -> None:
    start = Start(cwd=str(tmp_path / "missing"), model="openai/gpt-5-mini",
                  provider=settings("openai/gpt-5-mini"), store_dir=str(tmp_path / "store"))
    code, events, _ = _worker(start)
    assert code == 2
    assert [(type(e), getattr(e, "code", None)) for e in events] == [
        (Error, "native.launch.start_failed")]
