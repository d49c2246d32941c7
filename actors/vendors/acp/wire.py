"""ACP v1 messages corral reads, as msgspec Structs (camelCase on the wire, unknown fields ignored).

Only what the translator uses is typed; the rest of a message stays out of the Struct (ACP says
unknown fields must be tolerated). ``session/update`` is one Struct for every variant, keyed by
``sessionUpdate``: variants come and go between agent versions, and one that corral does not
know must not fail the decode. Absent and ``null`` read alike (``None``). The shapes corral's
ACP agent (``supervisor.acp.schema``) reads or writes the same, ``NameValue`` and ``Location``, are
in ``protocol.acp``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from protocol.acp import PROTOCOL_VERSION as PROTOCOL_VERSION
from protocol.acp import Location, NameValue


class _In(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    """Base of the inbound shapes."""


class AuthMethod(_In, frozen=True, kw_only=True):
    id: str
    name: str | None = None


class SessionCapabilities(_In, frozen=True, kw_only=True):
    resume: Any = None
    close: Any = None


class AgentCapabilities(_In, frozen=True, kw_only=True):
    load_session: bool = False
    session_capabilities: SessionCapabilities | None = None


class AgentInfo(_In, frozen=True, kw_only=True):
    name: str | None = None
    version: str | None = None


class InitializeResult(_In, frozen=True, kw_only=True):
    protocol_version: int
    agent_capabilities: AgentCapabilities = AgentCapabilities()
    auth_methods: list[AuthMethod] = []
    agent_info: AgentInfo | None = None


class ModelInfo(_In, frozen=True, kw_only=True):
    model_id: str
    name: str | None = None


class Models(_In, frozen=True, kw_only=True):
    current_model_id: str | None = None
    available_models: list[ModelInfo] = []


class Modes(_In, frozen=True, kw_only=True):
    current_mode_id: str | None = None


class ConfigChoice(_In, frozen=True, kw_only=True):
    value: Any = None
    name: str | None = None


class ConfigOption(_In, frozen=True, kw_only=True):
    id: str
    category: str | None = None
    current_value: Any = None
    options: list[ConfigChoice] = []


class SessionResult(_In, frozen=True, kw_only=True):
    """``session/new``, ``session/load`` and ``session/resume`` results."""

    session_id: str | None = None
    models: Models | None = None
    modes: Modes | None = None
    config_options: list[ConfigOption] | None = None


def offered_models(models: Models | None, config: list[ConfigOption] | None) -> list[str]:
    """The model ids a session offers: ``models.availableModels`` (Gemini, claude-code-acp),
    else the choices of its ``model`` config option (OpenCode, codex-acp), else none."""
    if models is not None:
        return [m.model_id for m in models.available_models]
    for option in config or ():
        if option.category == "model":
            return [str(c.value) for c in option.options if c.value is not None]
    return []


class PromptUsage(_In, frozen=True, kw_only=True):
    input_tokens: int = 0
    output_tokens: int = 0
    cached_read_tokens: int = 0
    cached_write_tokens: int = 0


class PromptResult(_In, frozen=True, kw_only=True):
    stop_reason: str
    usage: PromptUsage | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class ToolCall(_In, frozen=True, kw_only=True):
    """A ``tool_call``/``tool_call_update`` update, or the ``toolCall`` of a permission request."""

    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[dict[str, Any]] | None = None
    locations: list[Location] | None = None
    raw_input: Any = None
    raw_output: Any = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class Update(_In, frozen=True, kw_only=True):
    """Any ``session/update`` variant; ``session_update`` says which fields mean something."""

    session_update: str
    content: Any = None
    tool_call_id: str | None = None
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    locations: list[Location] | None = None
    raw_input: Any = None
    raw_output: Any = None
    entries: list[dict[str, Any]] | None = None
    available_commands: list[dict[str, Any]] | None = None
    current_mode_id: str | None = None
    config_options: list[ConfigOption] | None = None
    used: int | None = None
    size: int | None = None
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")

    def tool_call(self) -> ToolCall:
        """The tool-call fields of a ``tool_call``/``tool_call_update``."""
        return ToolCall(tool_call_id=self.tool_call_id or "", title=self.title, kind=self.kind,
                        status=self.status,
                        content=self.content if isinstance(self.content, list) else None,
                        locations=self.locations, raw_input=self.raw_input,
                        raw_output=self.raw_output, meta=self.meta)


class UpdateParams(_In, frozen=True, kw_only=True):
    session_id: str | None = None
    update: Update


class PermissionOption(_In, frozen=True, kw_only=True):
    option_id: str
    kind: str
    name: str | None = None


class PermissionRequest(_In, frozen=True, kw_only=True):
    session_id: str | None = None
    tool_call: ToolCall
    options: list[PermissionOption] = []


class ReadTextFile(_In, frozen=True, kw_only=True):
    path: str
    line: int | None = None
    limit: int | None = None


class WriteTextFile(_In, frozen=True, kw_only=True):
    path: str
    content: str


class TerminalCreate(_In, frozen=True, kw_only=True):
    command: str
    args: list[str] = []
    env: list[NameValue] = []
    cwd: str | None = None
    output_byte_limit: int | None = None


class TerminalRef(_In, frozen=True, kw_only=True):
    terminal_id: str
