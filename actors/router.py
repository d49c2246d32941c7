"""The request router: which part of the application serves each client request.

The composition root (``actors.app.App``) answers the requests about the daemon itself
(``daemon.status``, ``daemon.shutdown``) and hands every other one here: sessions to the session
table (a live session's own requests to its actor), worktrees to the workspaces, and the
services (MCP, LSP, usage, placement) to theirs. A method served nowhere is ``unknown_method``.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from actors.lsp import LanguageServers
from actors.mcp.wiring import McpParts
from actors.session.sessions import ClosedSession, SessionTable
from actors.usage.service import UsageService
from actors.workspace import Workspaces
from actors.workspace.requests import WorktreeRequests
from protocol.errors import UnknownMethod
from protocol.messages import (
    ClientRequest,
    Empty,
    HarnessList,
    HarnessListResult,
    LspList,
    LspListResult,
    McpList,
    McpListResult,
    McpRestart,
    McpServerResult,
    PlacementStatusRequest,
    SessionClose,
    SessionCompact,
    SessionCreate,
    SessionGet,
    SessionInterrupt,
    SessionList,
    SessionListResult,
    SessionPermission,
    SessionPrompt,
    SessionResult,
    SessionResume,
    SessionSetModel,
    SessionSetPermissions,
    UsageSummary,
    WorkspaceCommit,
    WorkspaceDiff,
    WorkspaceDiscard,
    WorkspaceMerge,
)
from protocol.models import WorkspaceSpec
from supervisor.placement.backend import PlacementBackend
from supervisor.placement.policy import wanted_node

__all__ = ["Router"]


class Router:
    """Serves the client requests of sessions, workspaces and services (see the module docstring)."""

    def __init__(self, *, sessions: SessionTable, workspaces: Workspaces, worktrees: WorktreeRequests,
                 mcp: McpParts, lsp: LanguageServers, usage: UsageService, placement: PlacementBackend,
                 by_name: Callable[[str], str]) -> None:
        self.sessions = sessions
        self.workspaces = workspaces
        self.worktrees = worktrees
        self.mcp = mcp
        self.lsp = lsp
        self.usage = usage
        self.placement = placement
        self.by_name = by_name
        """The client name of a connection id (the daemon's roster)."""

    async def handle(self, request: ClientRequest, connection_id: str) -> msgspec.Struct:
        if isinstance(request, SessionCreate):
            # A node the backend cannot place on is refused before anything is made.
            await self.placement.place(wanted_node(request.options))
            if request.prompt is None:
                request = _goal_as_prompt(request)
        match request:
            case PlacementStatusRequest():
                return await self.placement.status()
            case HarnessList(models=models):
                return HarnessListResult(harnesses=await self.sessions.detections(models=models))
            case SessionCreate(workspace=WorkspaceSpec()):
                info = await self.worktrees.create(request)
                return SessionResult(session=info, warnings=self.sessions.warnings(info.id))
            case SessionCreate():
                shared, key = await self.mcp.prepare(request)
                try:
                    info = await self.sessions.create(shared)
                except BaseException:
                    self.mcp.adopt(key, None)
                    raise
                self.mcp.adopt(key, info.id)
                return SessionResult(session=info, warnings=self.sessions.warnings(info.id))
            case SessionList():
                return SessionListResult(sessions=[self.workspaces.describe(i) for i in self.sessions.infos()])
            case LspList():
                return LspListResult(servers=self.lsp.infos())
            case SessionResume():
                return SessionResult(session=await self.sessions.resume(request))
            case SessionGet(session_id=sid):
                return SessionResult(session=self.workspaces.describe(self.sessions.get(sid).info()))
            case WorkspaceDiff(session_id=sid, stat=stat):
                self.sessions.get(sid)
                return await self.workspaces.diff(sid, stat=stat)
            case WorkspaceCommit(session_id=sid, message=message):
                self.sessions.get(sid)
                return await self.workspaces.commit(sid, message)
            case WorkspaceMerge(session_id=sid, strategy=strategy):
                return await self.worktrees.merge(sid, strategy)
            case WorkspaceDiscard(session_id=sid, force=force):
                await self.worktrees.discard(sid, force=force, by=connection_id)
                return Empty()
            case UsageSummary():
                return await self.usage.summary(request)
            case McpList():
                return McpListResult(servers=self.mcp.registry.infos())
            case McpRestart(name=name):
                return McpServerResult(server=await self.mcp.registry.restart(name))
            case SessionClose(session_id=sid) if isinstance(self.sessions.get(sid), ClosedSession):
                return Empty()  # closing an ended session is a no-op
            case (SessionPrompt(session_id=sid) | SessionInterrupt(session_id=sid)
                  | SessionPermission(session_id=sid) | SessionSetModel(session_id=sid)
                  | SessionSetPermissions(session_id=sid)
                  | SessionCompact(session_id=sid) | SessionClose(session_id=sid)):
                result: msgspec.Struct = await self.sessions.live_session(sid).call(
                    request, connection_id, by_name=self.by_name(connection_id))
                if isinstance(request, SessionClose):
                    self.mcp.release(sid)
                return result
        raise UnknownMethod(f"{type(request).__name__} is not served here")


def _goal_as_prompt(request: SessionCreate) -> SessionCreate:
    """A native autonomous session created without a prompt starts with its goal (the first
    user message of the run); a bad ``options.autonomous`` is refused here."""
    if request.harness != "native" or not request.options:
        return request
    from actors.native.daemon.translate import autonomy  # with the first native request

    settings = autonomy(request.options)
    return request if settings is None else msgspec.structs.replace(request, prompt=settings.goal)
