"""Data carried inside requests and results: session info, harness detection, policies."""

from __future__ import annotations

from typing import Literal

import msgspec

from .base import Data
from .events import PermissionMode as PermissionMode  # defined with the ``permissions`` event
from .events import SessionState


class Permissions(Data, kw_only=True, frozen=True):
    """A session's permission policy: a mode plus tool-name glob patterns that are always allowed."""

    mode: PermissionMode = "ask"
    allow_tools: list[str] = []


class McpServer(Data, kw_only=True, frozen=True):
    """An MCP server a session's harness should reach: a command (stdio) or a URL (http).

    The keys after ``headers`` are those of a ``[mcp.servers.NAME]`` config table: ``cwd`` of a
    stdio server, ``tools`` an allow-list of bare tool names (``None``: every tool), and the
    start-up and per-call timeouts in seconds (``None``: the daemon's defaults).
    """

    name: str
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    url: str | None = None
    headers: dict[str, str] = {}
    cwd: str | None = None
    tools: list[str] | None = None
    startup_timeout: float | None = None
    call_timeout: float | None = None


McpServerState = Literal["idle", "starting", "running", "failed"]
"""``idle``: not started yet (servers start on first use); ``starting``: spawning, handshaking or
waiting out a restart backoff; ``failed``: past its restart intensity, until ``mcp.restart``."""


class McpServerInfo(Data, kw_only=True, frozen=True):
    """One supervised MCP server as ``mcp.list`` shows it.

    ``tools`` are full names (``mcp__NAME__TOOL``), kept while the server is failed; ``pid`` is
    the server process's (null unless running, and always null for an HTTP server).
    """

    name: str
    state: McpServerState
    pid: int | None
    tools: list[str]
    restarts: int
    last_error: str | None
    transport: Literal["stdio", "http"] = "stdio"


WorkspaceMode = Literal["none", "worktree"]
WorkspaceState = Literal["active", "merged", "discarded"]
FileStatus = Literal["added", "modified", "deleted"]


class WorkspaceSpec(Data, kw_only=True, frozen=True):
    """``session.create``'s ``workspace``: where the session works.

    ``none`` (the default) runs it in ``cwd``. ``worktree`` runs it in a new git worktree of the
    repository that contains ``cwd``, on a new ``branch`` (default ``corral/<name or id>``) made
    from ``base`` (a commit-ish; default the current ``HEAD``).
    """

    mode: WorkspaceMode = "none"
    base: str | None = None
    branch: str | None = None


class WorkspaceInfo(Data, kw_only=True, frozen=True):
    """A session's worktree: its ``branch``, the worktree's top level (``path``), the ``base``
    commit its diff is taken against, how many files differ from it (as last counted), and
    whether it was ``merged`` or ``discarded``."""

    branch: str
    path: str
    base: str
    changed_files: int
    state: WorkspaceState = "active"


class FileChange(Data, kw_only=True, frozen=True):
    """One file of a ``workspace.diff``: lines ``added`` and ``removed`` (0 for a binary file)."""

    path: str
    status: FileStatus
    added: int
    removed: int


class Placement(Data, kw_only=True, frozen=True):
    """Where a session's child runs on a placement backend other than ``local``: the backend,
    the node (its id and IP) and the incarnation (``epoch``: 1 for the first child, one more
    for each restart or resume, each a new placement)."""

    backend: str
    node_id: str
    node_ip: str
    epoch: int


class SessionInfo(Data, kw_only=True, frozen=True):
    """What a client sees of a session (``session.get``, ``session.list``, ``session.create``).

    A session in a worktree has ``cwd`` inside the worktree, ``repo`` the top level of the
    repository it came from, and ``workspace`` its worktree; both are null otherwise.
    """

    id: str
    name: str | None
    harness: str
    cwd: str
    model: str | None
    state: SessionState
    created_at: str
    last_seq: int
    restarts: int
    pid: int | None
    vendor_session_id: str | None = None
    repo: str | None = None
    workspace: WorkspaceInfo | None = None
    permissions: PermissionMode = "ask"
    """The session's permission mode now (``session.set_permissions`` changes it)."""
    placement: Placement | None = None
    """Where its child runs, or last ran while the session is open (restarting); null on the
    ``local`` backend, where every child runs on the daemon's machine, and once it ended."""


class ProviderInfo(Data, kw_only=True, frozen=True):
    """A model provider a harness can use (native: built in or a ``[providers.NAME]`` table)."""

    name: str
    kind: str
    base_url: str | None = None
    api_key_env: str | None = None
    has_key: bool = False
    """Whether the key variable is set in the daemon's environment (a session's ``env`` may
    still bring one)."""


class Features(Data, kw_only=True, frozen=True):
    """What a harness can do, statically: clients use it to decide what to offer."""

    steer: bool = False
    resume: bool = False
    permissions: bool = False
    interrupt: bool = False
    set_model: bool = False
    models: list[str] = []
    mcp: str | None = None
    providers: list[ProviderInfo] = []


class Detection(Data, kw_only=True, frozen=True):
    """Whether a harness can run here, and what it is: ``harness.list`` returns one per harness."""

    harness: str
    available: bool
    version: str | None = None
    path: str | None = None
    features: Features = msgspec.field(default_factory=Features)
    min_version: str | None = None
    login: Literal["logged_in", "logged_out", "unknown"] = "unknown"
    reason: str | None = None


class ChildProcess(Data, kw_only=True, frozen=True):
    """One live child process of the daemon, as ``daemon.status`` lists it."""

    key: str
    kind: str
    pid: int
    node_id: str | None = None
    """The node it runs on (its ``pid`` is that node's); null for a child of the daemon's own
    machine, which is every child on the ``local`` backend."""


class NodeStatus(Data, kw_only=True, frozen=True):
    """One node of the placement backend, as ``placement.status`` lists it: ``agent_pid`` is its
    node agent's pid (on that node; null while none runs), ``children`` and ``sessions`` count
    the live corral children and the open sessions placed on it."""

    node_id: str
    node_ip: str
    alive: bool
    agent_pid: int | None
    children: int
    sessions: int


class ConnectionInfo(Data, kw_only=True, frozen=True):
    """One open client connection of the daemon, as ``daemon.status`` lists it: its id and
    what its ``hello`` said it is."""

    connection_id: str
    name: str
    version: str = ""


class DaemonInfo(Data, kw_only=True, frozen=True):
    """The daemon's identity as the handshake reports it."""

    version: str
    pid: int


class ClientInfo(Data, kw_only=True, frozen=True):
    """The client's self-description in ``hello`` (informational)."""

    name: str = "unknown"
    version: str = ""
