"""The daemon's request router (``App.handle``), in process with the fake harness: what it
refuses, and the requests it answers itself without asking a session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from actors.app import App, Config
from protocol.errors import UnknownMethod, UnknownSession, Unsupported
from protocol.messages import (
    Empty,
    SessionClose,
    SessionCreate,
    SessionGet,
    SessionResult,
    SessionSubscribe,
    WorkspaceDiscard,
    WorkspaceMerge,
)
from supervisor.config import LoadedConfig
from supervisor.server import Host
from supervisor.statedir import StateDir

pytestmark = pytest.mark.timeout(120)


def _app(state_root: Path) -> App:
    state = StateDir(state_root)
    state.ensure()
    host = Host(state, Config().daemon)
    app = App(host, LoadedConfig(config=Config(), source=None, warnings=[]))
    app.boot(host)
    return app


@asynccontextmanager
async def _serving(state_root: Path) -> AsyncIterator[App]:
    """The application with the children these requests need: workspaces and sessions."""
    app = _app(state_root)
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            await nursery.start(app.workspaces.run)
            await nursery.start(app.sessions.run)
            yield app
            nursery.cancel_scope.cancel()


async def test_a_request_the_connection_serves_itself_is_unknown_here(tmp_path: Path) -> None:
    app = _app(tmp_path / "state")
    with pytest.raises(UnknownMethod, match="SessionSubscribe is not served here"):
        await app.handle(SessionSubscribe(id=1, session_id="s-1"), "c-1")


async def test_requests_about_an_unknown_session_are_unknown_session(tmp_path: Path) -> None:
    app = _app(tmp_path / "state")
    for request in (SessionGet(id=1, session_id="s-nope"), SessionClose(id=2, session_id="s-nope"),
                    WorkspaceDiscard(id=3, session_id="s-nope"),
                    WorkspaceMerge(id=4, session_id="s-nope", strategy="merge")):
        with pytest.raises(UnknownSession):
            await app.handle(request, "c-1")


async def test_closing_an_ended_session_is_a_no_op(tmp_path: Path) -> None:
    async with _serving(tmp_path / "state") as app:
        created = await app.handle(SessionCreate(id=1, harness="fake", cwd=str(tmp_path)), "c-1")
        assert isinstance(created, SessionResult)
        sid = created.session.id
        assert await app.handle(SessionClose(id=2, session_id=sid), "c-1") == Empty()
        await app.sessions.current(sid)  # the session has moved to ended
        ended = await app.handle(SessionGet(id=3, session_id=sid), "c-1")
        assert isinstance(ended, SessionResult) and ended.session.state == "closed"

        assert await app.handle(SessionClose(id=4, session_id=sid), "c-2") == Empty()
        again = await app.handle(SessionGet(id=5, session_id=sid), "c-1")
        assert again == ended  # nothing was written: same state, same last seq


async def test_workspace_requests_on_a_session_without_worktree_are_unsupported(tmp_path: Path) -> None:
    async with _serving(tmp_path / "state") as app:
        created = await app.handle(SessionCreate(id=1, harness="fake", cwd=str(tmp_path)), "c-1")
        assert isinstance(created, SessionResult) and created.session.workspace is None
        sid = created.session.id
        with pytest.raises(Unsupported, match="has no worktree"):
            await app.handle(WorkspaceDiscard(id=2, session_id=sid, force=True), "c-1")
        got = await app.handle(SessionGet(id=3, session_id=sid), "c-1")
        assert isinstance(got, SessionResult) and got.session.state != "closed"  # force closed nothing
