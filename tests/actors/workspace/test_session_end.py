"""A worktree session's end as every request sees it: the state its clients were told.

In process (the daemon's ``App`` without its listener), with the real fake harness and real git.
A session that published ``closed`` still winds down for a moment (its log closes, its actor
exits) before the session table holds it as ended; a client that sees the ``closed`` event and
at once asks for ``workspace.discard`` or ``workspace.merge`` must meet the ended session: never
``session_busy`` ("session … is closed: close it first"), never a merge that keeps the worktree
of a session that is gone.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from actors.app import App, Config
from protocol.messages import (
    Empty,
    SessionClose,
    SessionCreate,
    SessionGet,
    SessionResult,
    WorkspaceDiscard,
    WorkspaceMerge,
)
from protocol.models import WorkspaceSpec
from supervisor.config import LoadedConfig
from supervisor.server import Host
from supervisor.statedir import StateDir

from .gitrig import git, make_repo

pytestmark = pytest.mark.timeout(120)


@asynccontextmanager
async def _app(state_root: Path) -> AsyncIterator[App]:
    """The daemon's application with the children these requests need: workspaces, sessions."""
    state = StateDir(state_root)
    state.ensure()
    host = Host(state, Config().daemon)
    app = App(host, LoadedConfig(config=Config(), source=None, warnings=[]))
    app.boot(host)
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            await nursery.start(app.workspaces.run)
            await nursery.start(app.sessions.run)
            yield app
            nursery.cancel_scope.cancel()


async def _close_and_see_it(app: App, session_id: str) -> None:
    """Close the session from another client and return the moment the ``closed`` status is
    published to its subscribers, with no checkpoint after the wake-up (a client's read loop)."""
    feed = app.feed(session_id)
    seen = feed.last_seq
    async with trio.open_nursery() as nursery:
        nursery.start_soon(app.handle, SessionClose(id=2, session_id=session_id), "c-closer")
        while True:
            await feed.wait_past(seen)
            frames = [json.loads(frame) for frame in feed.read_from(seen + 1)]
            seen = feed.last_seq
            if any(f["event"] == {"type": "status", "state": "closed", "stalled": False} for f in frames):
                return


async def _worktree_session(app: App, repo: Path) -> tuple[str, Path]:
    created = await app.handle(SessionCreate(id=1, harness="fake", cwd=str(repo),
                                             workspace=WorkspaceSpec(mode="worktree")), "c-1")
    assert isinstance(created, SessionResult) and created.session.workspace is not None
    return created.session.id, Path(created.session.workspace.path)


async def test_a_client_that_sees_closed_can_discard_at_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with _app(tmp_path / "state") as app:
        sid, worktree = await _worktree_session(app, repo)
        await _close_and_see_it(app, sid)
        assert await app.handle(WorkspaceDiscard(id=3, session_id=sid), "c-1") == Empty()
        got = await app.handle(SessionGet(id=4, session_id=sid), "c-1")
        assert isinstance(got, SessionResult) and got.session.workspace is not None
        assert got.session.state == "closed" and got.session.workspace.state == "discarded"
    assert not worktree.exists() and git(repo, "branch", "--list", "corral/*") == ""


async def test_a_client_that_sees_closed_and_merges_at_once_gets_the_ended_sessions_merge(
        tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with _app(tmp_path / "state") as app:
        sid, worktree = await _worktree_session(app, repo)
        (worktree / "notes.txt").write_text("from the session\n")
        await _close_and_see_it(app, sid)
        await app.handle(WorkspaceMerge(id=3, session_id=sid, strategy="merge"), "c-1")
        got = await app.handle(SessionGet(id=4, session_id=sid), "c-1")
        assert isinstance(got, SessionResult) and got.session.workspace is not None
        assert got.session.workspace.state == "merged"
    assert (repo / "notes.txt").read_text() == "from the session\n"
    # the session had ended: its worktree and branch go with the merge, as for any ended session
    assert not worktree.exists() and git(repo, "branch", "--list", "corral/*") == ""
