"""The frames between the daemon and a native worker (``python -m actors.native``).

Wire format: each frame is one **msgpack** document (msgspec's encoder), carried in a
length-prefixed frame (``protocol.framing.LengthPrefixFramer``: a 4-byte big-endian length, then
the bytes) on the worker's stdin (daemon → worker) and stdout (worker → daemon). msgpack rather
than JSON because tool outputs and file contents are large strings that msgpack carries without
escaping, and because nobody reads these pipes but the two ends (``options.log_path`` still shows
them: the frame log falls back to the text of a frame it cannot parse as JSON).

Daemon → worker (``Command``, tag field ``type``):

* ``start``: the first frame, exactly once: cwd, model ``PROVIDER/NAME`` and its resolved
  ``ProviderSettings`` (the API key is a secret: never logged, never in an event), permission
  policy, the native session id to continue (``None`` starts a new one), the store directory
  (``sessions/<id>/native/`` in the daemon's state dir), an earlier session's store file to
  continue from (``options.resume`` across corral sessions), tool limits, and the price table.
* ``prompt`` (start a turn), ``steer`` (inject into the running turn before its next model call),
  ``interrupt``, ``permission_decision``, ``set_model`` (with the new provider settings),
  ``shutdown`` (finish: abort a running turn, sync the store, exit 0), ``compact`` (compact the
  idle session's history now).

Worker → daemon: the normalized events of ``protocol.events`` themselves (``init``,
``assistant``/``thought`` deltas, ``tool``, ``permission``, ``permission_decided``, ``result``,
``error``, ``usage``), so the daemon side translates almost nothing.

Evolution follows the house rules: new fields get defaults, tags never change. Commands omit
defaults on the wire; events encode every field (as everywhere).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from .events import Decision, Event
from .models import Permissions
from .native_context import ContextSettings
from .confinement import Confinement as Confinement
from .price import Price as Price

__all__ = [
    "Answer",
    "Ask",
    "AskDiagnostics",
    "Autonomy",
    "CallMcpTool",
    "Command",
    "Compact",
    "Decide",
    "DiagnosticsReport",
    "Interrupt",
    "ListMcpTools",
    "MaxTokensField",
    "McpResult",
    "McpToolDecl",
    "McpTools",
    "Price",
    "Prompt",
    "ProviderKind",
    "ProviderSettings",
    "SetModel",
    "Shutdown",
    "Start",
    "Steer",
    "WorkerTelemetry",
    "decode_command",
    "decode_event",
    "decode_worker_frame",
    "encode_command",
    "encode_event",
    "is_ask",
]

ProviderKind = Literal["openai", "openai-chat", "anthropic", "gemini"]
"""The wire protocol a model adapter speaks: Responses, Chat Completions, Messages, Gemini."""

MaxTokensField = Literal["max_completion_tokens", "max_tokens"]
"""Where Chat Completions carries the output limit (older compatible servers want ``max_tokens``)."""


class ProviderSettings(msgspec.Struct, kw_only=True, frozen=True):
    """A model's provider, resolved by the daemon: everything the worker's adapter may use.

    ``api_key`` is the key itself (``""``: send no credential); it never appears in ``repr``.
    ``api_key_env`` is the variable it was read from (``""``: the provider names none), which a
    missing key's error names. ``chat_max_tokens_field`` is the Chat Completions field that
    carries an output limit (``[providers.NAME] max_tokens_field``).
    """

    kind: ProviderKind
    provider: str
    model: str
    base_url: str
    api_key: str = ""
    api_key_env: str = ""
    max_response_bytes: int = 32 * 1024 * 1024
    max_retries: int = 2
    timeout: float = 300.0
    retry_backoff: float = 0.5
    chat_max_tokens_field: MaxTokensField = "max_completion_tokens"

    def __repr__(self) -> str:
        key = "'***'" if self.api_key else "''"
        return (f"ProviderSettings(kind={self.kind!r}, provider={self.provider!r}, "
                f"model={self.model!r}, base_url={self.base_url!r}, api_key={key})")

    @property
    def spec(self) -> str:
        """The model as the session named it: ``PROVIDER/NAME``."""
        return f"{self.provider}/{self.model}"


class Autonomy(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """``options.autonomous`` of a native session: the goal and the budgets of a run that goes on
    turn after turn until the model calls ``report_done`` or a budget is spent. Every budget is
    checked after each turn and stops the run once reached (``None``: no such budget); the
    wallclock and per-turn timeout also interrupt a turn that outlives them."""

    goal: str
    max_turns: Annotated[int, Meta(ge=1)] = 20
    max_input_tokens: Annotated[int, Meta(ge=1)] | None = None
    max_output_tokens: Annotated[int, Meta(ge=1)] | None = None
    max_cost_usd: Annotated[float, Meta(gt=0)] | None = None
    max_wallclock_s: Annotated[float, Meta(gt=0)] | None = None
    per_turn_timeout_s: Annotated[float, Meta(gt=0)] | None = None
    on_turn_error: Literal["abort", "retry", "skip"] = "abort"


class _Command(msgspec.Struct, tag_field="type", kw_only=True, frozen=True, omit_defaults=True):
    """Base of every daemon → worker frame."""




class WorkerTelemetry(msgspec.Struct, kw_only=True, frozen=True):
    """Where a worker exports the spans of its model calls (the daemon's ``[telemetry]``)."""

    endpoint: str
    """The OTLP/HTTP base URL (``/v1/traces`` is appended)."""
    service_name: str = "corral"


class Start(_Command, tag="start", kw_only=True, frozen=True):
    """Configure the worker; it answers ``init`` once its session is loaded (or created)."""

    cwd: str
    model: str
    provider: ProviderSettings
    permissions: Permissions = Permissions()
    session_id: str | None = None
    store_dir: str
    resume_path: str | None = None
    """A store file of an earlier corral session to continue from (copied into ``store_dir``)."""
    instructions: str | None = None
    thinking: bool = False
    """Ask the model for its reasoning (thought deltas); only models that reason accept it."""
    limits: dict[str, Any] = {}
    """Overrides of the coding tools' limits (``actors.native.tools.Limits`` field names)."""
    prices: dict[str, Price] = {}
    """Model name (without provider) → price; a model not listed has ``cost_usd: null``."""
    context: ContextSettings = ContextSettings()
    """Instruction files and skills (``protocol.native_context``)."""
    tools: list[str] | None = None
    """The session's active tool set (``options.tools``): the only tools the model sees."""
    daemon_tools: bool = False
    """The daemon answers asks: offer the session's MCP tools and ``diagnostics``, and decorate
    ``write``/``edit`` results with diagnostics. ``False`` (a worker run without a daemon):
    the coding tools alone, and the worker sends no ask."""
    autonomous: Autonomy | None = None
    """Run each prompt as an autonomous run (``actors.native.worker.autonomy``)."""
    confinement: Confinement | None = None
    """The session's sandbox (``Confinement``); None: unconfined."""
    compaction: dict[str, Any] = {}
    """``[native.compaction]`` (``actors.native.compaction.CompactionConfig`` field names);
    empty or ``context_tokens = 0``: no compaction."""
    telemetry: WorkerTelemetry | None = None
    """Export a ``gen_ai`` span per model call, under the turn's ``Prompt.traceparent``."""


class Prompt(_Command, tag="prompt", kw_only=True, frozen=True):
    """Start a turn with ``text``."""

    text: str
    traceparent: str | None = None
    """The W3C trace context of the daemon's ``corral.turn`` span (with ``Start.telemetry``)."""


class Steer(_Command, tag="steer", kw_only=True, frozen=True):
    """Deliver ``text`` into the running turn (a new turn if none runs any more)."""

    text: str


class Interrupt(_Command, tag="interrupt", kw_only=True, frozen=True):
    """Abort the running turn: its model call or tool, then ``result {interrupted}``."""


class Decide(_Command, tag="permission_decision", kw_only=True, frozen=True):
    """The answer to the worker's ``permission`` request ``permission_id``."""

    permission_id: str
    decision: Decision


class SetModel(_Command, tag="set_model", kw_only=True, frozen=True):
    """Use this model from the next model call on."""

    model: str
    provider: ProviderSettings


class Compact(_Command, tag="compact", kw_only=True, frozen=True):
    """Compact the idle session's history now (``session.compact``); a ``compaction`` event
    answers (an ``error`` one if a turn runs)."""


class Shutdown(_Command, tag="shutdown", kw_only=True, frozen=True):
    """Abort what runs, sync the store and exit 0."""


class McpToolDecl(msgspec.Struct, kw_only=True, frozen=True, omit_defaults=True):
    """One MCP tool as the model is offered it: ``name`` is ``mcp__SERVER__TOOL``."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = {}


class McpTools(_Command, tag="mcp.tools", kw_only=True, frozen=True):
    """The answer to ``mcp.list_tools``: every tool of the session's servers (none on failure)."""

    id: int
    tools: list[McpToolDecl] = []


class McpResult(_Command, tag="mcp.result", kw_only=True, frozen=True):
    """The answer to ``mcp.call_tool``: the result's text blocks joined, what the model reads.

    ``error_code`` is set when the daemon, not the server, failed the call (``mcp.server_failed``,
    ``mcp.server_crashed``, ``mcp.call_timeout``, …); ``text`` then names it too."""

    id: int
    text: str
    is_error: bool = False
    error_code: str | None = None
    truncated: bool = False


class DiagnosticsReport(_Command, tag="lsp.report", kw_only=True, frozen=True):
    """The answer to ``lsp.diagnostics``: ``text`` is the ``Diagnostics:`` block (empty when
    there is nothing to say), ``lines`` its lines, ``servers`` each checking server's state
    (``ok``, ``timeout``, ``crashed``, ``failed``, ``unavailable``); no servers: none checks
    such files."""

    id: int
    path: str
    text: str = ""
    lines: list[str] = []
    servers: dict[str, str] = {}


Answer = McpTools | McpResult | DiagnosticsReport
"""The daemon's answers to the worker's asks."""

Command = Start | Prompt | Steer | Interrupt | Decide | SetModel | Shutdown | Compact | Answer
"""Every daemon → worker frame."""


class _Ask(msgspec.Struct, tag_field="type", kw_only=True, frozen=True, omit_defaults=True):
    """Base of every worker → daemon ask (see the module docstring)."""

    id: int


class ListMcpTools(_Ask, tag="mcp.list_tools", kw_only=True, frozen=True):
    """The tools of the session's MCP servers (idle servers start)."""


class CallMcpTool(_Ask, tag="mcp.call_tool", kw_only=True, frozen=True):
    """Call ``name`` (``mcp__SERVER__TOOL``) with ``arguments``."""

    name: str
    arguments: dict[str, Any] = {}


class AskDiagnostics(_Ask, tag="lsp.diagnostics", kw_only=True, frozen=True):
    """The diagnostics of ``path`` (relative to the session cwd, or absolute): of ``text`` just
    written to it, or (``text`` None) of the file as it is on disk."""

    path: str
    text: str | None = None


Ask = ListMcpTools | CallMcpTool | AskDiagnostics
"""Every worker → daemon ask."""


def encode_command(command: Command) -> bytes:
    """One command as msgpack (without the length prefix)."""
    return _ENCODER.encode(command)


def decode_command(payload: bytes) -> Command:
    """One command; raises ``msgspec.DecodeError`` (a ``ValidationError`` for a bad shape)."""
    return _COMMANDS.decode(payload)


def encode_event(event: Event | Ask) -> bytes:
    """One worker → daemon frame (an event or an ask) as msgpack (without the length prefix)."""
    return _ENCODER.encode(event)


def decode_event(payload: bytes) -> Event:
    """One worker → daemon event; raises ``msgspec.DecodeError`` on garbage."""
    return _EVENTS.decode(payload)


def decode_worker_frame(payload: bytes) -> Event | Ask:
    """One worker → daemon frame, an event or an ask; ``msgspec.DecodeError`` on garbage."""
    return _WORKER_FRAMES.decode(payload)


def is_ask(payload: bytes) -> bool:
    """Whether a worker → daemon frame is an ask (a cheap look at its ``type`` only)."""
    try:
        kind = _KIND.decode(payload).type
    except msgspec.DecodeError:
        return False
    return kind in _ASK_TAGS


class _Kind(msgspec.Struct):
    type: str = ""


_ASK_TAGS = frozenset(str(c.__struct_config__.tag) for c in (ListMcpTools, CallMcpTool, AskDiagnostics))
_KIND = msgspec.msgpack.Decoder(_Kind)
_WORKER_FRAMES: msgspec.msgpack.Decoder[Event | Ask] = msgspec.msgpack.Decoder(Event | Ask)
_ENCODER = msgspec.msgpack.Encoder()
_COMMANDS = msgspec.msgpack.Decoder(Command)
_EVENTS = msgspec.msgpack.Decoder(Event)
