"""The command line's failures as users read them: one line on stderr that says what to do."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import trio

from tests.supervisor.cli.test_cli import LIMIT, _new, corral, short_dir, state

__all__ = ["short_dir", "state"]  # fixtures, used by name


async def test_send_to_a_closed_session_says_how_to_bring_it_back(state: Path,
                                                                  short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        sid = await _new(state, short_dir)
        closed = await corral("close", sid, "--state-dir", str(state))
        assert closed.code == 0, closed.err
        sent = await corral("send", sid, "hello", "--state-dir", str(state))
    assert sent.code == 1
    line = sent.one_error_line()
    assert line.startswith(f"corral: session {sid} is closed") and f"`corral resume {sid}`" in line


async def test_send_to_an_unknown_session_has_no_resume_hint(state: Path) -> None:
    with trio.fail_after(LIMIT):
        sent = await corral("send", "s-nope", "hello", "--state-dir", str(state))
    assert sent.code == 1 and "resume" not in sent.one_error_line()


@pytest.mark.parametrize("command", ["daemon", "start"])
async def test_a_taken_port_is_one_line_that_says_how_to_pick_another(short_dir: Path,
                                                                      command: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with trio.fail_after(LIMIT):
            ran = await corral(command, "--state-dir", str(short_dir / "state"),
                               "--port", str(port))
    assert ran.code == 1
    line = ran.one_error_line()  # no log line before it, no traceback
    assert line.startswith("corral: ") and line.count("corral") == 1
    assert f"127.0.0.1:{port} is already in use" in line and "--port 0" in line
    assert "[daemon]" in line


async def test_new_warns_of_a_missing_key_and_creates_the_session(state: Path,
                                                                  short_dir: Path) -> None:
    with trio.fail_after(LIMIT):
        # An empty variable in the session's env wins over the daemon's (which may have one).
        made = await corral("new", "--state-dir", str(state), "--harness", "native", "--model",
                            "openai/gpt-5-mini", "--env", "OPENAI_API_KEY=", cwd=short_dir)
        assert made.code == 0, made.err
        sid = made.out.splitlines()[0]
        # The first native session may also say that the agent warms up (its own line).
        said = [line for line in made.err.splitlines() if "warming up" not in line]
        assert len(said) == 1 and said[0].startswith("corral: warning: OPENAI_API_KEY is not set")
        keyed = await corral("new", "--state-dir", str(state), "--harness", "native", "--model",
                             "openai/gpt-5-mini", "--env", "OPENAI_API_KEY=sk-x", cwd=short_dir)
        assert keyed.code == 0 and keyed.err == ""
        listed = await corral("ls", "--state-dir", str(state))
        assert sid in listed.out and keyed.out.splitlines()[0] in listed.out
