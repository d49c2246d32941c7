"""``WorktreeRequests``: the requests where a worktree and its session meet — ``session.create``
with a ``workspace``, ``workspace.merge`` and ``workspace.discard``.

``Workspaces`` knows worktrees and nothing of sessions; these requests need both: the worktree
is made before its session (the session runs in it), a merge removes the worktree of a session
that has ended, a discard closes (with ``force``) the session that runs in it, and each change is
announced in the session's log. What they need of the session table is ``SessionTableLike``
(the daemon's ``actors.session.sessions.SessionTable`` is one), so tests can hand them a fake.

A session counts as ended once it told its clients so (``closed``, ``failed``): the table's
``current`` waits for such a session to move from ``live`` to ended before it answers.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Mapping
from typing import Any, Protocol

import msgspec
import trio

from actors.workspace.service import Workspaces
from protocol import events as ev
from protocol.errors import CorralError, SessionBusy
from protocol.messages import CommitResult, MergeStrategy, SessionCreate
from protocol.models import SessionInfo, WorkspaceSpec

__all__ = ["LiveSessionLike", "SessionTableLike", "WorktreeRequests"]


class LiveSessionLike(Protocol):
    """A running session, as these requests use it."""

    @property
    def state(self) -> str: ...

    def info(self) -> SessionInfo: ...

    async def prompt(self, text: str, by: str) -> Any: ...

    async def close(self, by: str) -> None: ...


class _Described(Protocol):
    def info(self) -> SessionInfo: ...


class SessionTableLike(Protocol):
    """What these requests need of the daemon's session table."""

    @property
    def live(self) -> Mapping[str, LiveSessionLike]:
        """The running sessions by id."""
        ...

    def get(self, session_id: str) -> _Described:
        """The session, live or ended; raises ``UnknownSession``."""
        ...

    async def current(self, session_id: str) -> object:
        """The session as its clients were told it is (an ended one is out of ``live`` once
        this returns); raises ``UnknownSession``."""
        ...

    async def create(self, request: SessionCreate, *, session_id: str | None = None) -> SessionInfo:
        """Start a session (with this id)."""
        ...

    async def announce(self, session_id: str, event: ev.Event) -> None:
        """Append ``event`` to the session's log, live or ended."""
        ...


class WorktreeRequests:
    """The worktree requests that involve a session (see the module docstring)."""

    def __init__(self, workspaces: Workspaces, sessions: SessionTableLike) -> None:
        self.workspaces = workspaces
        self.sessions = sessions

    async def create(self, request: SessionCreate) -> SessionInfo:
        """``session.create`` with a ``workspace``: the worktree first, then the session in it.

        The session id is chosen here so the worktree is made for it; a session that cannot
        be created takes its worktree with it. The first prompt waits for the ``workspace``
        event, so that event comes before the turn in the session's log.
        """
        session_id = f"s-{secrets.token_hex(6)}"
        record = await self.workspaces.place(session_id, request.workspace or _NO_WORKSPACE,
                                             cwd=request.cwd, label=request.name)
        if record is None:  # mode "none": a session like any other
            return await self.sessions.create(request, session_id=session_id)
        plain = msgspec.structs.replace(request, cwd=record.cwd, workspace=None, prompt=None)
        try:
            await self.sessions.create(plain, session_id=session_id)
            await self.workspaces.bind(record)
        except BaseException:
            with trio.CancelScope(shield=True):
                with contextlib.suppress(CorralError):  # it may not exist, or be closed already
                    live = self.sessions.live.get(session_id)
                    if live is not None:
                        await live.close("session")
                await self.workspaces.release(record)
            raise
        await self.sessions.announce(session_id, self.workspaces.event(session_id, "created"))
        found = self.sessions.get(session_id)
        live = self.sessions.live.get(session_id)
        if request.prompt and live is not None:
            await live.prompt(request.prompt, "session")
        return self.workspaces.describe(found.info())

    async def merge(self, session_id: str, strategy: MergeStrategy) -> CommitResult:
        """``workspace.merge``; the worktree of a session that has ended goes with the merge."""
        await self.sessions.current(session_id)  # a session that told ``closed`` has ended
        ended = session_id not in self.sessions.live
        merged = await self.workspaces.merge(session_id, strategy, ended=ended)
        await self.sessions.announce(session_id, self.workspaces.event(session_id, "merged"))
        return merged

    async def discard(self, session_id: str, *, force: bool, by: str) -> None:
        """``workspace.discard``: an open session is ``session_busy`` unless ``force`` closes it
        (``by`` the client that asked)."""
        self.sessions.get(session_id)  # ``unknown_session`` first
        record = self.workspaces.owned(session_id)  # ``unsupported`` before anything is closed
        await self.sessions.current(session_id)  # a session that told ``closed`` has ended
        live = self.sessions.live.get(session_id)
        if live is not None:
            if not force:
                raise SessionBusy(f"session {session_id} is {live.state}: close it first, or "
                                  "discard with force to close it and discard its worktree")
            await live.close(by)
        await self.workspaces.discard(session_id)
        if not (record.removed and record.state == "discarded"):  # a second discard is a no-op
            await self.sessions.announce(session_id, self.workspaces.event(session_id, "discarded"))


_NO_WORKSPACE = WorkspaceSpec()
