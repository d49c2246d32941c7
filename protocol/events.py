"""Normalized session events: the one event model every harness is translated into.

Events have defaults for everything a harness may leave out, so a fake child may write
``{"type":"result","stop_reason":"end_turn","is_error":false}``; the session completes them.
Every field is encoded, defaults included, because clients rely on the required fields being
present.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .base import Data, Message
from .sandbox import SandboxInfo

ToolKind = Literal["read", "edit", "exec", "mcp", "search", "other"]
ToolPhase = Literal["started", "updated", "completed"]
Delivery = Literal["prompted", "steered", "held"]
Decision = Literal["allow", "deny", "allow_always"]
DecidedAs = Literal["allow", "deny", "allow_always", "timeout", "cancelled"]
ErrorClass = Literal["auth", "limit", "entitlement", "overloaded", "protocol", "launch", "network",
                     "unknown"]
SessionState = Literal[
    "starting", "idle", "running", "waiting", "restarting", "closing", "closed", "failed"
]
ExitReason = Literal["exited", "crashed", "killed", "closed", "daemon_restarted", "lost"]
WorkspaceChange = Literal["created", "changed", "merged", "discarded"]
PermissionMode = Literal["ask", "auto_edit", "auto", "inherit"]


class Usage(Data, kw_only=True, frozen=True):
    """Token counts of a turn; a count the harness did not report is 0."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class Init(Message, tag="init", kw_only=True, frozen=True):
    """The harness is up and reported its session id, model, working directory and tools."""

    vendor_session_id: str | None = None
    model: str | None = None
    cwd: str | None = None
    tools: list[str] = []
    sandbox: SandboxInfo | msgspec.UnsetType = msgspec.UNSET
    """The session's sandbox (set by the session, not the harness); absent when unconfined."""


class Assistant(Message, tag="assistant", kw_only=True, frozen=True):
    """Assistant text; ``delta`` marks a streamed fragment rather than a whole message."""

    text: str
    delta: bool = False
    subagent: str | msgspec.UnsetType = msgspec.UNSET
    """The subagent (of a native session) this event comes from; absent: the session's own agent."""


class Thought(Message, tag="thought", kw_only=True, frozen=True):
    """Reasoning text, streamed like ``assistant``."""

    text: str
    delta: bool = False
    subagent: str | msgspec.UnsetType = msgspec.UNSET
    """The subagent (of a native session) this event comes from; absent: the session's own agent."""


class User(Message, tag="user", kw_only=True, frozen=True):
    """A prompt as it reached the harness, and how it was delivered."""

    text: str
    delivery: Delivery = "prompted"


class Tool(Message, tag="tool", kw_only=True, frozen=True):
    """One phase of a tool call; the same ``call_id`` ties its phases together."""

    call_id: str
    name: str
    kind: ToolKind = "other"
    phase: ToolPhase = "started"
    input: Any = None
    output: Any = None
    is_error: bool = False
    subagent: str | msgspec.UnsetType = msgspec.UNSET
    """The subagent (of a native session) this event comes from; absent: the session's own agent."""


class Permission(Message, tag="permission", kw_only=True, frozen=True):
    """The harness asks whether a tool may run; answered by policy or by the first client."""

    permission_id: str
    tool: str
    kind: ToolKind = "other"
    input: Any = None
    options: list[str] = msgspec.field(default_factory=lambda: ["allow", "deny"])
    policy: bool = False
    """True when the session's policy answers it at once (its ``permission_decided`` by
    ``policy`` follows): no client needs to ask anyone. An addition: older logs lack it."""


class PermissionDecided(Message, tag="permission_decided", kw_only=True, frozen=True):
    """The one decision of a permission request; ``by`` is a connection id, ``policy`` or ``session``."""

    permission_id: str
    decision: DecidedAs
    by: str
    by_name: str = ""
    """Who decided in words a person knows: the deciding client's name from its ``hello``
    (``cli``, ``browser``, …), else ``by`` itself (``policy``, ``session``). Empty in events
    written before it existed: show ``by`` then."""


class PermissionsChanged(Message, tag="permissions", kw_only=True, frozen=True):
    """The session's permission mode changed (``session.set_permissions``); ``by`` is the
    connection id that changed it. An addition beyond PROTOCOL.md's core table."""

    mode: PermissionMode
    by: str


class Result(Message, tag="result", kw_only=True, frozen=True):
    """The end of a turn with its stop reason, usage, cost and duration."""

    stop_reason: str | None = None
    is_error: bool = False
    usage: Usage = Usage()
    cost_usd: float | None = None
    duration_ms: int | None = None


class Checkpoint(Message, tag="checkpoint", kw_only=True, frozen=True):
    """A turn of an autonomous run ended (or a restarted worker resumed from the last one):
    the turns done and the budgets spent so far; ``stop_reason`` is set on the last one."""

    turn: int
    usage: Usage = Usage()
    cost_usd: float | None = None
    elapsed_s: float = 0.0
    done: bool = False
    resumed: bool = False
    stop_reason: str | None = None


class Error(Message, tag="error", kw_only=True, frozen=True):
    """A failure the session or harness reported, classified with a stable code."""

    code: str
    message: str
    error_class: ErrorClass = msgspec.field(default="unknown", name="class")
    subagent: str | msgspec.UnsetType = msgspec.UNSET
    """The subagent (of a native session) this event comes from; absent: the session's own agent."""


class UsageReport(Message, tag="usage", kw_only=True, frozen=True):
    """A running usage figure reported mid-turn."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class LimitWindow(Data, kw_only=True, frozen=True):
    """One rate-limit window as the vendor reports it."""

    name: str
    used_percent: float | None = None
    resets_at: str | None = None


class Limits(Message, tag="limits", kw_only=True, frozen=True):
    """Rate-limit windows reported by the harness."""

    windows: list[LimitWindow] = []


class Status(Message, tag="status", kw_only=True, frozen=True):
    """The session's activity state, and whether it looks stalled."""

    state: SessionState
    stalled: bool = False


class Restarted(Message, tag="restarted", kw_only=True, frozen=True):
    """The harness child was restarted by its supervisor."""

    attempt: int
    reason: str


class Exit(Message, tag="exit", kw_only=True, frozen=True):
    """The harness child ended; ``reason`` says who ended it."""

    exit_code: int | None = None
    signal: str | None = None
    reason: ExitReason = "exited"


class Workspace(Message, tag="workspace", kw_only=True, frozen=True):
    """The session's worktree was created, merged or discarded, or its count of changed files
    (against its base) changed after a turn."""

    state: WorkspaceChange
    branch: str
    path: str
    changed_files: int = 0


class Compaction(Message, tag="compaction", kw_only=True, frozen=True):
    """The native harness compacted the context of its next model request (or, ``reason:
    "manual"``, of an idle session on ``session.compact``): estimated prompt tokens before and
    after; the ids of the tool responses whose bodies became ``[elided]``; how many whole turns
    were dropped (``summarized``: replaced by a summary the model wrote); ``exhausted`` when
    what may not be touched still exceeds the target; ``warning`` names a problem that did not
    stop it (a summary that failed, a sidecar that could not be saved)."""

    reason: Literal["auto", "manual"] = "auto"
    mode: Literal["elide", "summarize"] = "elide"
    context_tokens: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    elided: list[str] = []
    dropped_turns: int = 0
    summarized: bool = False
    exhausted: bool = False
    warning: str | None = None


class SandboxEvent(Message, tag="sandbox", kw_only=True, frozen=True):
    """The session's sandbox refused something: today a network connection (``kind:
    "network"``) to ``host``:``port``, a host outside its allowlist (``net = "model"``), so a
    user sees what was blocked and can add it to ``allow_hosts``."""

    kind: Literal["network"] = "network"
    host: str
    port: int
    decision: Literal["denied"] = "denied"
    count: int = 1
    """The refusals this event stands for: 1 for the first; repeats of the same ``host:port``
    that follow within a window are summed up in a later event (``actors.sandboxing.refusals``)."""


Event = (
    Init
    | Assistant
    | Thought
    | User
    | Tool
    | Permission
    | PermissionDecided
    | PermissionsChanged
    | Result
    | Error
    | UsageReport
    | Limits
    | Status
    | Restarted
    | Exit
    | Workspace
    | Checkpoint
    | Compaction
    | SandboxEvent
)
"""Every normalized event kind, discriminated by ``type``."""

EVENT_TYPES: tuple[type[Message], ...] = (
    Init, Assistant, Thought, User, Tool, Permission, PermissionDecided, PermissionsChanged,
    Result, Error, UsageReport, Limits, Status, Restarted, Exit, Workspace, Checkpoint, Compaction,
    SandboxEvent,
)
