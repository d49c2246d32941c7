"""The ACP v1 messages ``corral acp`` reads and writes, as msgspec Structs (camelCase on the wire).

corral is the *agent* here: the editor sends the requests below and receives ``session/update``
notifications and ``session/request_permission`` requests. Only what the facade uses is typed;
unknown fields are ignored (ACP says they must be tolerated) and ``_meta`` is kept as a dict.
Outgoing Structs omit their ``None`` members, as ACP's optional fields are absent rather than
null. (``actors/vendors/acp/wire.py`` holds the other direction, corral as an ACP *client*; the
shapes both directions read or write the same, ``NameValue`` and ``Location``, are in
``protocol.acp``.)
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from protocol.acp import PROTOCOL_VERSION, Location, NameValue

__all__ = [
    "PROTOCOL_VERSION", "AgentCapabilities", "AvailableCommand", "ClientInfo", "CloseParams",
    "ConfigChoice", "ConfigOption", "Content", "Diff", "InitializeParams", "InitializeResult",
    "ListParams", "ListResult", "ListedSession", "LoadParams", "Location", "McpServer",
    "ModeInfo", "Modes", "NameValue", "NewParams", "Outcome", "PermissionAnswer", "PermissionOption",
    "PermissionParams", "PlanEntry", "PromptParams", "PromptResult", "SessionParams",
    "SessionResult", "SetConfigParams", "SetConfigResult", "SetModeParams", "SetModelParams",
    "TextBlock", "ToolCallRef", "Update", "UpdateParams",
]

class _In(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """Base of what the editor sends."""


class _Out(msgspec.Struct, rename="camel", kw_only=True, frozen=True, omit_defaults=True):
    """Base of what corral sends: ``None`` members are left out."""


# --- from the editor ------------------------------------------------------------------------


class ClientInfo(_In, frozen=True, kw_only=True):
    name: str = "editor"
    title: str | None = None
    version: str | None = None


class InitializeParams(_In, frozen=True, kw_only=True):
    protocol_version: int = PROTOCOL_VERSION
    client_info: ClientInfo | None = None


class McpServer(_In, frozen=True, kw_only=True):
    """One of the editor's MCP servers: stdio (no ``type``), ``http`` or ``sse``; ACP gives
    ``env`` and ``headers`` as lists of ``{name, value}``."""

    name: str
    type: str | None = None
    command: str | None = None
    args: list[str] = []
    env: list[NameValue] = []
    url: str | None = None
    headers: list[NameValue] = []


class NewParams(_In, frozen=True, kw_only=True):
    """``session/new``; ``_meta.corral`` may carry harness, model, name, worktree, options."""

    cwd: str
    mcp_servers: list[McpServer] = []
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class LoadParams(_In, frozen=True, kw_only=True):
    """``session/load`` and ``session/resume``."""

    session_id: str
    cwd: str | None = None
    mcp_servers: list[McpServer] = []


class ListParams(_In, frozen=True, kw_only=True):
    cwd: str | None = None
    cursor: str | None = None


class SessionParams(_In, frozen=True, kw_only=True):
    """``session/close`` and ``session/cancel``: a session id alone."""

    session_id: str


CloseParams = SessionParams


class PromptParams(_In, frozen=True, kw_only=True):
    session_id: str
    prompt: list[dict[str, Any]] = []


class SetModeParams(_In, frozen=True, kw_only=True):
    session_id: str
    mode_id: str


class SetModelParams(_In, frozen=True, kw_only=True):
    session_id: str
    model_id: str


class SetConfigParams(_In, frozen=True, kw_only=True):
    session_id: str
    config_id: str
    value: Any = None


class Outcome(_In, frozen=True, kw_only=True):
    outcome: str
    option_id: str | None = None


class PermissionAnswer(_In, frozen=True, kw_only=True):
    """The editor's answer to ``session/request_permission``."""

    outcome: Outcome


# --- to the editor --------------------------------------------------------------------------


class AgentInfo(_Out, frozen=True, kw_only=True):
    name: str
    title: str | None = None
    version: str | None = None


class PromptCapabilities(_Out, frozen=True, kw_only=True):
    image: bool = False
    audio: bool = False
    embedded_context: bool = False


class McpCapabilities(_Out, frozen=True, kw_only=True):
    http: bool = False
    sse: bool = False


class SessionCapabilities(_Out, frozen=True, kw_only=True):
    list: dict[str, Any] | None = None
    resume: dict[str, Any] | None = None
    close: dict[str, Any] | None = None


class AgentCapabilities(_Out, frozen=True, kw_only=True):
    load_session: bool = False
    prompt_capabilities: PromptCapabilities = PromptCapabilities()
    mcp_capabilities: McpCapabilities = McpCapabilities()
    session_capabilities: SessionCapabilities = SessionCapabilities()


class InitializeResult(_Out, frozen=True, kw_only=True):
    protocol_version: int
    agent_capabilities: AgentCapabilities
    auth_methods: list[Any] = []
    agent_info: AgentInfo | None = None


class ModeInfo(_Out, frozen=True, kw_only=True):
    id: str
    name: str
    description: str | None = None


class Modes(_Out, frozen=True, kw_only=True):
    current_mode_id: str
    available_modes: list[ModeInfo]


class ConfigChoice(_Out, frozen=True, kw_only=True):
    value: str
    name: str
    description: str | None = None


class ConfigOption(_Out, frozen=True, kw_only=True, tag_field="type", tag="select"):
    """A ``select`` session config option (``mode`` or ``model``)."""

    id: str
    name: str
    category: str
    current_value: str
    options: list[ConfigChoice]


class SessionResult(_Out, frozen=True, kw_only=True):
    """``session/new`` (with ``sessionId``), ``session/load`` and ``session/resume``."""

    session_id: str | None = None
    modes: Modes | None = None
    config_options: list[ConfigOption] | None = None


class ListedSession(_Out, frozen=True, kw_only=True):
    session_id: str
    cwd: str
    title: str | None = None
    updated_at: str | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ListResult(_Out, frozen=True, kw_only=True):
    sessions: list[ListedSession]
    next_cursor: str | None = None


class PromptResult(_Out, frozen=True, kw_only=True):
    stop_reason: str
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class SetConfigResult(_Out, frozen=True, kw_only=True):
    config_options: list[ConfigOption]


class TextBlock(_Out, frozen=True, kw_only=True, tag_field="type", tag="text"):
    text: str


class Content(_Out, frozen=True, kw_only=True, tag_field="type", tag="content"):
    """Tool-call content: a content block."""

    content: TextBlock


class Diff(_Out, frozen=True, kw_only=True, tag_field="type", tag="diff"):
    """Tool-call content: a file edit (``old_text`` absent for a new file)."""

    path: str
    new_text: str
    old_text: str | None = None


class PlanEntry(_Out, frozen=True, kw_only=True):
    content: str
    priority: Literal["high", "medium", "low"]  # required, so never left out as a default
    status: Literal["pending", "in_progress", "completed"]


class AvailableCommand(_Out, frozen=True, kw_only=True):
    name: str
    description: str


class Cost(_Out, frozen=True, kw_only=True):
    amount: float
    currency: str


class Update(_Out, frozen=True, kw_only=True):
    """Any ``session/update`` variant; ``session_update`` names it, the rest is what it carries."""

    session_update: str
    content: TextBlock | list[Content | Diff] | None = None
    tool_call_id: str | None = None
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    locations: list[Location] | None = None
    raw_input: Any = None
    raw_output: Any = None
    entries: list[PlanEntry] | None = None
    available_commands: list[AvailableCommand] | None = None
    current_mode_id: str | None = None
    config_options: list[ConfigOption] | None = None
    used: int | None = None
    size: int | None = None
    cost: Cost | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class UpdateParams(_Out, frozen=True, kw_only=True):
    session_id: str
    update: Update


class ToolCallRef(_Out, frozen=True, kw_only=True):
    """The ``toolCall`` of a permission request."""

    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    raw_input: Any = None
    locations: list[Location] | None = None


class PermissionOption(_Out, frozen=True, kw_only=True):
    option_id: str
    name: str
    kind: str


class PermissionParams(_Out, frozen=True, kw_only=True):
    session_id: str
    tool_call: ToolCallRef
    options: list[PermissionOption]
