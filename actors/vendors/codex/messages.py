"""The parts of the ``codex app-server`` v2 protocol the translator reads, as msgspec Structs.

Checked against the schema that ``codex app-server generate-json-schema`` prints for 0.171.0.
Only the fields we use are declared: unknown fields are ignored, so newer builds that add fields
still decode. Codex is camelCase on the wire (``rename="camel"``); item payloads are flat objects
tagged by ``type``, decoded into one permissive ``Item`` because the translator needs a handful of
fields from a dozen evolving kinds.
"""

from __future__ import annotations

from typing import Any

import msgspec


class _Wire(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    """Base of every Codex payload we decode."""


class ThreadRef(_Wire, kw_only=True, frozen=True):
    id: str
    model: str | None = None
    cwd: str | None = None


class ThreadResponse(_Wire, kw_only=True, frozen=True):
    """The result of ``thread/start`` and ``thread/resume``."""

    thread: ThreadRef
    model: str | None = None
    cwd: str | None = None


class TurnRef(_Wire, kw_only=True, frozen=True):
    id: str


class TurnResponse(_Wire, kw_only=True, frozen=True):
    """The result of ``turn/start``."""

    turn: TurnRef


class TurnError(_Wire, kw_only=True, frozen=True):
    message: str = ""
    codex_error_info: Any = None
    additional_details: str | None = None


class Turn(_Wire, kw_only=True, frozen=True):
    id: str
    status: str = "completed"
    error: TurnError | None = None
    duration_ms: int | None = None


class TurnParams(_Wire, kw_only=True, frozen=True):
    """``turn/started`` and ``turn/completed``."""

    thread_id: str | None = None
    turn: Turn


class Item(_Wire, kw_only=True, frozen=True):
    """A ``ThreadItem`` of any kind; each kind fills its own subset of these fields."""

    type: str
    id: str
    text: str | None = None
    summary: list[str] = []
    content: Any = None
    command: str | None = None
    cwd: str | None = None
    status: str | None = None
    aggregated_output: str | None = None
    exit_code: int | None = None
    changes: list[Any] = []
    server: str | None = None
    tool: Any = None
    arguments: Any = None
    result: Any = None
    error: Any = None
    query: str | None = None
    action: Any = None
    results: Any = None
    path: str | None = None
    content_items: Any = None
    success: bool | None = None


class ItemParams(_Wire, kw_only=True, frozen=True):
    """``item/started`` and ``item/completed``."""

    item: Item
    thread_id: str | None = None
    turn_id: str | None = None


class DeltaParams(_Wire, kw_only=True, frozen=True):
    """Streaming deltas: agent message, reasoning, command output, file change output."""

    item_id: str
    delta: str
    thread_id: str | None = None


class ProgressParams(_Wire, kw_only=True, frozen=True):
    """``item/mcpToolCall/progress``."""

    item_id: str
    message: str
    thread_id: str | None = None


class ErrorParams(_Wire, kw_only=True, frozen=True):
    """The ``error`` notification; ``will_retry`` means Codex retries on its own."""

    error: TurnError
    will_retry: bool = False
    thread_id: str | None = None
    turn_id: str | None = None


class Tokens(_Wire, kw_only=True, frozen=True):
    """One ``TokenUsageBreakdown``: OpenAI counts cached input inside ``input_tokens``."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0


class TokenUsage(_Wire, kw_only=True, frozen=True):
    total: Tokens
    last: Tokens | None = None


class TokenUsageParams(_Wire, kw_only=True, frozen=True):
    """``thread/tokenUsage/updated``: ``total`` is cumulative for the thread."""

    token_usage: TokenUsage
    thread_id: str | None = None
    turn_id: str | None = None


class RateLimitWindow(_Wire, kw_only=True, frozen=True):
    used_percent: float | None = None
    window_duration_mins: int | None = None
    resets_at: int | None = None


class RateLimitSnapshot(_Wire, kw_only=True, frozen=True):
    primary: RateLimitWindow | None = None
    secondary: RateLimitWindow | None = None


class RateLimitsParams(_Wire, kw_only=True, frozen=True):
    """``account/rateLimits/updated``."""

    rate_limits: RateLimitSnapshot


class ResolvedParams(_Wire, kw_only=True, frozen=True):
    """``serverRequest/resolved``: an approval was answered or cleared by Codex."""

    request_id: int | str
    thread_id: str | None = None


class CommandApproval(_Wire, kw_only=True, frozen=True):
    """``item/commandExecution/requestApproval`` (``approvalId`` tells apart several callbacks
    of one item; null for ordinary commands)."""

    item_id: str | None = None
    approval_id: str | None = None
    command: str | None = None
    cwd: str | None = None
    reason: str | None = None


class FileChangeApproval(_Wire, kw_only=True, frozen=True):
    """``item/fileChange/requestApproval``."""

    item_id: str | None = None
    reason: str | None = None
    grant_root: str | None = None


class PermissionsApproval(_Wire, kw_only=True, frozen=True):
    """``item/permissions/requestApproval``: extra sandbox permissions for the turn or session."""

    item_id: str | None = None
    cwd: str | None = None
    reason: str | None = None
    permissions: dict[str, Any] = {}


class McpElicitation(_Wire, kw_only=True, frozen=True):
    """``mcpServer/elicitation/request``: how Codex asks MCP tool-call approvals (``_meta``)."""

    server_name: str = "unknown"
    turn_id: str | None = None
    mode: str | None = None
    message: str | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class LegacyExecApproval(_Wire, kw_only=True, frozen=True):
    """``execCommandApproval`` (v1 conversations)."""

    call_id: str | None = None
    approval_id: str | None = None
    command: list[str] = []
    cwd: str | None = None
    reason: str | None = None


class LegacyPatchApproval(_Wire, kw_only=True, frozen=True):
    """``applyPatchApproval`` (v1 conversations)."""

    call_id: str | None = None
    file_changes: dict[str, Any] = {}
    reason: str | None = None
    grant_root: str | None = None
