"""The client protocol's results: the shape of ``ok.result`` for each method.

Results are untagged data (``Data``): which one an ``ok`` carries follows from the method of the
request it answers (``RESULT_TYPES``).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .base import Data
from .events import Delivery
from .models import (
    ChildProcess,
    ConnectionInfo,
    Detection,
    FileChange,
    McpServerInfo,
    NodeStatus,
    SessionInfo,
)


class Empty(Data, kw_only=True, frozen=True):
    """The ``{}`` result of requests that return nothing."""


class SupervisorInfo(Data, kw_only=True, frozen=True):
    """Restart statistics of one supervisor of the daemon's tree.

    ``restarts``: every restart it decided since it started; ``restarts_in_period``: those that
    count against ``intensity`` now (more than ``intensity`` within ``period`` seconds and the
    supervisor gives up, and its parent decides); ``children``/``running``: how many children
    it holds and how many of them run.
    """

    name: str
    strategy: str
    intensity: int
    period: float
    restarts: int
    restarts_in_period: int
    children: int
    running: int


class DaemonStatusResult(Data, kw_only=True, frozen=True):
    version: str
    pid: int
    uptime_s: float
    sessions: int
    clients: int
    children: list[ChildProcess]
    supervisors: list[SupervisorInfo] = msgspec.field(default_factory=list)
    """Every supervisor of the daemon's tree, root first (depth-first)."""
    connections: list[ConnectionInfo] = msgspec.field(default_factory=list)
    """Every connection past its handshake (``clients`` counts those still in it too), oldest first."""
    warming: list[str] = msgspec.field(default_factory=list)
    """Harnesses warming up now, whose next session waits for it (``native``: its fork server
    is starting); empty when nothing is."""


class HarnessListResult(Data, kw_only=True, frozen=True):
    harnesses: list[Detection]


class SessionWarning(Data, kw_only=True, frozen=True, omit_defaults=True):
    """Something about a session that was created all the same but will likely fail, e.g.
    ``native.auth.missing_key``: its provider's key variable (``variable``) is not set."""

    code: str
    message: str
    variable: str | None = None


class SessionResult(Data, kw_only=True, frozen=True, omit_defaults=True):
    session: SessionInfo
    warnings: list[SessionWarning] = msgspec.field(default_factory=list)
    """``session.create`` only: what the client should tell its user (absent when none)."""


class SessionListResult(Data, kw_only=True, frozen=True):
    sessions: list[SessionInfo]


class SubscribeResult(Data, kw_only=True, frozen=True):
    last_seq: int


class PromptResult(Data, kw_only=True, frozen=True):
    delivery: Delivery


LspState = Literal["starting", "running", "restarting", "failed"]
"""``failed``: restarted more often than its restart intensity allows; no process runs."""


class LspServerInfo(Data, kw_only=True, frozen=True):
    """One language-server actor: the workspace ``root`` (a path) and the server id it runs."""

    root: str
    server: str
    state: LspState
    pid: int | None
    restarts: int


class LspListResult(Data, kw_only=True, frozen=True):
    servers: list[LspServerInfo]


class McpListResult(Data, kw_only=True, frozen=True):
    servers: list[McpServerInfo]


class McpServerResult(Data, kw_only=True, frozen=True):
    server: McpServerInfo


class DiffResult(Data, kw_only=True, frozen=True):
    """``workspace.diff``: the unified ``diff`` (bounded; ``truncated`` when cut, its last line
    then saying how many bytes were left out) and every changed file."""

    diff: str
    files: list[FileChange]
    truncated: bool = False


class CommitResult(Data, kw_only=True, frozen=True):
    """``workspace.commit`` and ``workspace.merge``: the commit made (its full hash)."""

    commit: str


class LoginCodeResult(Data, kw_only=True, frozen=True):
    """``ui.login_code``: the ``code``, the page's ``url`` carrying it, and its lifetime."""

    code: str
    url: str
    expires_in: float


class PlacementStatus(Data, kw_only=True, frozen=True):
    """``placement.status``: the ``backend`` (``local``, ``ray``), the cluster ``address`` it
    joined (null on ``local``) and its nodes, dead ones it still knows included."""

    backend: str
    address: str | None
    nodes: list[NodeStatus]


RESULT_TYPES: dict[str, type[Data]] = {
    "daemon.status": DaemonStatusResult,
    "daemon.shutdown": Empty,
    "harness.list": HarnessListResult,
    "session.create": SessionResult,
    "session.list": SessionListResult,
    "session.get": SessionResult,
    "session.resume": SessionResult,
    "session.compact": Empty,
    "session.subscribe": SubscribeResult,
    "session.unsubscribe": Empty,
    "session.prompt": PromptResult,
    "session.interrupt": Empty,
    "session.permission": Empty,
    "session.set_model": Empty,
    "session.set_permissions": Empty,
    "session.close": Empty,
    "lsp.list": LspListResult,
    "mcp.list": McpListResult,
    "mcp.restart": McpServerResult,
    "workspace.diff": DiffResult,
    "workspace.commit": CommitResult,
    "workspace.merge": CommitResult,
    "workspace.discard": Empty,
    "ui.login_code": LoginCodeResult,
    "placement.status": PlacementStatus,
}
"""The result shape of each method, for clients that decode ``ok.result``."""
