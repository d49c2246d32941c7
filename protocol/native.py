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

from typing import Any, Literal

import msgspec

from .events import Decision, Event
from .models import Permissions

__all__ = [
    "Command",
    "Compact",
    "Decide",
    "Interrupt",
    "Price",
    "Prompt",
    "ProviderKind",
    "ProviderSettings",
    "SetModel",
    "Shutdown",
    "Start",
    "Steer",
    "decode_command",
    "decode_event",
    "encode_command",
    "encode_event",
]

ProviderKind = Literal["openai", "openai-chat", "anthropic", "gemini"]
"""The wire protocol a model adapter speaks: Responses, Chat Completions, Messages, Gemini."""


class ProviderSettings(msgspec.Struct, kw_only=True, frozen=True):
    """A model's provider, resolved by the daemon: everything the worker's adapter may use.

    ``api_key`` is the key itself (``""``: send no credential); it never appears in ``repr``.
    """

    kind: ProviderKind
    provider: str
    model: str
    base_url: str
    api_key: str = ""
    max_response_bytes: int = 32 * 1024 * 1024
    max_retries: int = 2
    timeout: float = 300.0
    retry_backoff: float = 0.5

    def __repr__(self) -> str:
        key = "'***'" if self.api_key else "''"
        return (f"ProviderSettings(kind={self.kind!r}, provider={self.provider!r}, "
                f"model={self.model!r}, base_url={self.base_url!r}, api_key={key})")

    @property
    def spec(self) -> str:
        """The model as the session named it: ``PROVIDER/NAME``."""
        return f"{self.provider}/{self.model}"


class Price(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """US dollars per million tokens of each kind (``config/prices.toml``)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


class _Command(msgspec.Struct, tag_field="type", kw_only=True, frozen=True, omit_defaults=True):
    """Base of every daemon → worker frame."""


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
    compaction: dict[str, Any] = {}
    """``[native.compaction]`` (``actors.native.compaction.CompactionConfig`` field names);
    empty or ``context_tokens = 0``: no compaction."""


class Prompt(_Command, tag="prompt", kw_only=True, frozen=True):
    """Start a turn with ``text``."""

    text: str


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


Command = Start | Prompt | Steer | Interrupt | Decide | SetModel | Shutdown | Compact
"""Every daemon → worker frame."""


def encode_command(command: Command) -> bytes:
    """One command as msgpack (without the length prefix)."""
    return _ENCODER.encode(command)


def decode_command(payload: bytes) -> Command:
    """One command; raises ``msgspec.DecodeError`` (a ``ValidationError`` for a bad shape)."""
    return _COMMANDS.decode(payload)


def encode_event(event: Event) -> bytes:
    """One worker → daemon event as msgpack (without the length prefix)."""
    return _ENCODER.encode(event)


def decode_event(payload: bytes) -> Event:
    """One worker → daemon event; raises ``msgspec.DecodeError`` on garbage."""
    return _EVENTS.decode(payload)


_ENCODER = msgspec.msgpack.Encoder()
_COMMANDS = msgspec.msgpack.Decoder(Command)
_EVENTS = msgspec.msgpack.Decoder(Event)
