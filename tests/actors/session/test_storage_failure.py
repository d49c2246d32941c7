"""A session whose log cannot be written (a full disk) ends alone; the others carry on."""

from __future__ import annotations

import errno
import functools
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.session import sessions as sessions_module
from actors.session.eventlog import EventLog
from actors.session.sessions import SessionTable
from protocol.errors import SessionClosed, StorageFailed
from protocol.events import Result
from protocol.messages import SessionCreate
from actors.app import Config
from actors.harnesses import drivers
from supervisor.ledger.store import Ledger


async def test_a_full_disk_ends_one_session_and_spares_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    full = {"now": False}
    real_open = EventLog.open

    def write(fd: int, data: Any) -> int:
        if full["now"]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.write(fd, data)

    def open_log(directory: Path, session_id: str, **kwargs: Any) -> Any:
        if session_id == first_id[0]:
            kwargs["write"] = write
        return real_open(directory, session_id, **kwargs)

    first_id: list[str] = [""]
    monkeypatch.setattr(sessions_module.secrets, "token_hex", functools.partial(_ids, iter(["a" * 12, "b" * 12])))
    first_id[0] = "s-" + "a" * 12
    monkeypatch.setattr(sessions_module.EventLog, "open", staticmethod(open_log))
    config = Config()
    sessions = SessionTable(tmp_path / "state", config, Ledger(tmp_path / "state"), drivers(config))
    sessions.boot()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(sessions.run)
            doomed = await sessions.create(SessionCreate(id=1, harness="fake", cwd=str(tmp_path)))
            healthy = await sessions.create(SessionCreate(id=2, harness="fake", cwd=str(tmp_path)))
            assert doomed.id == first_id[0]
            full["now"] = True
            live = sessions.live_session(doomed.id)
            with pytest.raises(StorageFailed) as info:
                await live.prompt("hello", "c-1")
            assert "No space left" in info.value.message
            await live.closed.wait()
            assert sessions.get(doomed.id).info().state == "failed"
            with pytest.raises(SessionClosed):
                await sessions.live_session(doomed.id).prompt("again", "c-1")
            other = sessions.live_session(healthy.id)
            assert await other.prompt("still fine?", "c-1") == "prompted"
            while not any(isinstance(f.event, Result) for f in other.log.frames_from(1)):
                await other.feed.wait_past(other.log.last_seq)
            nursery.cancel_scope.cancel()


def _ids(values: Any, _n: int) -> str:
    return str(next(values))
