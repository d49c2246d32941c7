"""The command line's failures as users read them: one line on stderr that says what to do."""

from __future__ import annotations

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
