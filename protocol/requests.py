"""The client protocol's requests: one Struct per method, tagged with the method's name.

A request is ``{"type": METHOD, "id": INT, …params}``; the daemon answers each with one ``ok``
(its result shape is in ``results``) or ``error`` carrying the same id. Tags are the method
names of PROTOCOL.md and never change.
"""

from __future__ import annotations

from typing import Any, Literal

from .base import Message
from .events import Decision
from .models import McpServer, PermissionMode, Permissions, WorkspaceSpec


class Request(Message, kw_only=True, frozen=True):
    """Base of every request: carries the client's id, echoed in the response."""

    id: int


class DaemonStatus(Request, tag="daemon.status", kw_only=True, frozen=True):
    """Ask for the daemon's version, uptime, counts and live children."""


class DaemonShutdown(Request, tag="daemon.shutdown", kw_only=True, frozen=True):
    """Stop the daemon gracefully after answering."""


class HarnessList(Request, tag="harness.list", kw_only=True, frozen=True):
    """List every harness with its detection; ``models`` (an addition) also asks the CLIs that
    list their models only slowly (ACP agents open a session, OpenCode loads its providers)."""

    models: bool = False


class SessionCreate(Request, tag="session.create", kw_only=True, frozen=True):
    """Start a session on a harness in a working directory."""

    harness: str
    cwd: str
    name: str | None = None
    model: str | None = None
    prompt: str | None = None
    permissions: Permissions | None = None
    env: dict[str, str] | None = None
    mcp_servers: list[McpServer] | None = None
    options: dict[str, Any] | None = None
    workspace: WorkspaceSpec | None = None


class SessionList(Request, tag="session.list", kw_only=True, frozen=True):
    """List every session the daemon knows, closed ones included."""


class SessionGet(Request, tag="session.get", kw_only=True, frozen=True):
    """Describe one session."""

    session_id: str


class SessionSubscribe(Request, tag="session.subscribe", kw_only=True, frozen=True):
    """Replay a session's events from ``from_seq`` (0 = everything), then follow it live."""

    session_id: str
    from_seq: int = 0


class SessionUnsubscribe(Request, tag="session.unsubscribe", kw_only=True, frozen=True):
    """Stop following a session on this connection."""

    session_id: str


class SessionPrompt(Request, tag="session.prompt", kw_only=True, frozen=True):
    """Send a prompt; it is prompted, steered or held depending on the session's state."""

    session_id: str
    text: str


class SessionInterrupt(Request, tag="session.interrupt", kw_only=True, frozen=True):
    """Interrupt the running turn."""

    session_id: str


class SessionPermission(Request, tag="session.permission", kw_only=True, frozen=True):
    """Answer an open permission request."""

    session_id: str
    permission_id: str
    decision: Decision


class SessionSetModel(Request, tag="session.set_model", kw_only=True, frozen=True):
    """Switch the session's model for the following turns."""

    session_id: str
    model: str


class SessionSetPermissions(Request, tag="session.set_permissions", kw_only=True, frozen=True):
    """Set the session's permission mode from now on (its ``allow_tools`` stay); every client
    sees a ``permissions`` event. Open requests the new mode allows are decided by the policy."""

    session_id: str
    mode: PermissionMode


class SessionClose(Request, tag="session.close", kw_only=True, frozen=True):
    """Close the session; answered once the harness close sequence has ended."""

    session_id: str


class SessionCompact(Request, tag="session.compact", kw_only=True, frozen=True):
    """Compact an idle native session's context now; ``{}`` once the harness has the request,
    and a ``compaction`` event in the log when it is done. ``unsupported`` for harnesses that
    cannot; ``session_busy`` while a turn runs."""

    session_id: str


class SessionResume(Request, tag="session.resume", kw_only=True, frozen=True):
    """Reopen a ``closed`` or ``failed`` session whose harness can resume: same id, its log
    continues (``restarted {reason: "resumed"}``), a new child resumes the vendor conversation.

    ``env`` is given again because a session's env values are never stored (only their keys).
    """

    session_id: str
    env: dict[str, str] | None = None


class LspList(Request, tag="lsp.list", kw_only=True, frozen=True):
    """List the language servers running (or failed) under the daemon, one per (root, server)."""


class McpList(Request, tag="mcp.list", kw_only=True, frozen=True):
    """List every MCP server the daemon supervises, with its state, pid and tools."""


class McpRestart(Request, tag="mcp.restart", kw_only=True, frozen=True):
    """Restart one MCP server (a ``failed`` one included); answered once it runs or fails again."""

    name: str


class PlacementStatusRequest(Request, tag="placement.status", kw_only=True, frozen=True):
    """The placement backend and its nodes, each with its node agent and its load."""


MergeStrategy = Literal["merge", "squash", "rebase"]


class WorkspaceDiff(Request, tag="workspace.diff", kw_only=True, frozen=True):
    """The session's worktree against its base: committed, uncommitted and untracked changes.

    ``stat``: the list of files only (``diff`` is then empty).
    """

    session_id: str
    stat: bool = False


class WorkspaceCommit(Request, tag="workspace.commit", kw_only=True, frozen=True):
    """Commit everything uncommitted in the session's worktree (untracked files included)."""

    session_id: str
    message: str


class WorkspaceMerge(Request, tag="workspace.merge", kw_only=True, frozen=True):
    """Bring the session's branch into the branch its repository has checked out.

    ``merge`` always makes a merge commit, ``squash`` one commit on top of the target,
    ``rebase`` replays the branch's commits on top of it. Refused, with the repository left as
    it was, on a conflict (``merge_conflict``) or a dirty target checkout (``target_dirty``).
    """

    session_id: str
    strategy: MergeStrategy = "merge"


class WorkspaceDiscard(Request, tag="workspace.discard", kw_only=True, frozen=True):
    """Remove the session's worktree and branch, unmerged commits included.

    An open session is ``session_busy`` unless ``force``, which closes it first.
    """

    session_id: str
    force: bool = False


class UiLoginCode(Request, tag="ui.login_code", kw_only=True, frozen=True):
    """Mint a one-time login code for the browser UI (``corral ui``): valid 60 s, single use.

    Served only to a connection that gave the token in ``hello``; the page trades the code for
    a cookie of its own, so the daemon's token never reaches a browser.
    """


ClientRequest = (
    DaemonStatus
    | DaemonShutdown
    | HarnessList
    | SessionCreate
    | SessionList
    | SessionGet
    | SessionSubscribe
    | SessionUnsubscribe
    | SessionPrompt
    | SessionInterrupt
    | SessionPermission
    | SessionSetModel
    | SessionSetPermissions
    | SessionClose
    | SessionResume
    | SessionCompact
    | LspList
    | McpList
    | McpRestart
    | WorkspaceDiff
    | WorkspaceCommit
    | WorkspaceMerge
    | WorkspaceDiscard
    | UiLoginCode
    | PlacementStatusRequest
)
"""Every request a client may send after the handshake."""

REQUEST_TYPES: dict[str, type[Request]] = {
    cls.__struct_config__.tag: cls  # type: ignore[misc]
    for cls in (
        DaemonStatus, DaemonShutdown, HarnessList, SessionCreate, SessionList, SessionGet,
        SessionSubscribe, SessionUnsubscribe, SessionPrompt, SessionInterrupt,
        SessionPermission, SessionSetModel, SessionClose, SessionResume, LspList, McpList,
        McpRestart, WorkspaceDiff, WorkspaceCommit, WorkspaceMerge, WorkspaceDiscard,
        UiLoginCode,
        SessionCompact, SessionSetPermissions, PlacementStatusRequest,
    )
}
