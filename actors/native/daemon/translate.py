"""The sans-IO translator between a session and one native worker (``actors.harness.Translator``).

The worker already speaks corral's event model, so translating is mostly bookkeeping:

* ``start`` sends the ``start`` frame: cwd, the model and its resolved provider settings,
  permissions, the native session id to continue (``request.resume``: the session's own id
  after a restart, or ``options.resume``), the store directory (``sessions/<id>/native/``, next
  to the request's ``work_dir``), the store file of an earlier corral session when the id lives
  there (found by the driver's ``find_store``), tool limits (``options.limits``), instructions,
  ``options.thinking``, the price table, the ``[native]`` context settings (instruction files,
  skills), the active tool set (``options.tools``, a list of tool names: the only tools the
  model sees; kept in the session's options, so a restart or resume keeps it), whether the
  daemon answers asks (``daemon_tools``), ``options.autonomous`` (``protocol.native.Autonomy``)
  and the compaction settings (``[native.compaction]`` with ``options.compaction`` over it);
  the last two are checked here: a bad table is the caller's ``bad_request``;
* ``init`` makes the translator ``ready`` and gives the ``vendor_session_id``; ``result`` ends
  the turn; a ``checkpoint {resumed}`` (a restarted worker went on with an autonomous run)
  starts one; ``permission`` ids are remembered until decided, interrupted or the turn ends;
* commands become their frames: ``prompt``, ``steer`` (only while a turn runs: otherwise
  ``None`` and the session holds the prompt), ``interrupt``, ``permission_decision``,
  ``set_model`` (resolved here, so a bad model is the caller's ``bad_request``), ``compact``
  (``session.compact``), ``shutdown``.

Frames are length-prefixed msgpack (``protocol.native``). No clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from actors.harness import HarnessRequest, Output, Send
from protocol.errors import BadRequest, ProtocolError, SessionBusy, UnknownPermission
from protocol.events import Checkpoint, Decision, Init, Permission, PermissionDecided, Result
from protocol.framing import LengthPrefixFramer
from protocol.messages import SessionWarning
from protocol.native_context import ContextSettings
from protocol.native import (
    Autonomy, Command, Compact, Decide, Interrupt, Price, Prompt, ProviderSettings, SetModel,
    Shutdown, Start, Steer, WorkerTelemetry, decode_event, encode_command, is_ask,
)

from ..compaction.settings import CompactionConfig
from .config import key_warnings
from ..providers import ModelSpecError, ProviderTable, resolve

__all__ = ["NativeTranslator", "StoreFinder", "TurnTracing", "autonomy", "store_dir"]

StoreFinder = Callable[[str], str | None]
"""Native session id → the store file of an earlier corral session that holds it, if any."""


def store_dir(request: HarnessRequest) -> Path:
    """``sessions/<id>/native/``: beside the session's private ``work_dir``."""
    return Path(request.work_dir).parent / "native"


class TurnTracing(NamedTuple):
    """The daemon's telemetry, for its native workers: where they export their model calls'
    spans (``settings``), and ``context(session_id, model)``, the ``traceparent`` of the
    session's turn that a prompt starts (``None`` while no exporter runs)."""

    settings: WorkerTelemetry
    context: Callable[[str, str], str | None]


class NativeTranslator:
    """See the module docstring."""

    def __init__(self, request: HarnessRequest, *, providers: Mapping[str, ProviderTable],
                 prices: Mapping[str, Price], daemon_env: Mapping[str, str],
                 find_store: StoreFinder = lambda _id: None,
                 context: ContextSettings = ContextSettings(), daemon_tools: bool = False,
                 compaction: CompactionConfig | None = None,
                 tracing: TurnTracing | None = None) -> None:
        self._request = request
        self._tracing = tracing
        self._providers = providers
        self._daemon_env = daemon_env
        if not request.model:
            raise BadRequest("the native harness needs a model: PROVIDER/NAME, "
                             "e.g. openai/gpt-5-mini")
        self._model = request.model
        self._provider = self._resolve(request.model)
        self._limits = _table(request.options, "limits")
        self._context = context
        self._tools = _names(request.options, "tools")
        self._autonomy = autonomy(request.options)
        self._compaction = _compaction(compaction or CompactionConfig(),
                                       _table(request.options, "compaction"))
        self._prices = dict(prices)
        self._find_store = find_store
        self._daemon_tools = daemon_tools
        self._framer = LengthPrefixFramer()
        self._ready = False
        self._session_id: str | None = None
        self._turn = False
        self._open: set[str] = set()

    @property
    def warnings(self) -> list[SessionWarning]:
        """What ``session.create`` warns of: a provider without its key (``key_warnings``)."""
        return key_warnings(self._provider)

    @property
    def ready(self) -> bool:
        """True once the worker sent ``init``."""
        return self._ready

    @property
    def vendor_session_id(self) -> str | None:
        """The native session id, once ``init`` told it."""
        return self._session_id

    def start(self, now: float) -> list[Output]:
        """The ``start`` frame."""
        request = self._request
        resume = request.resume
        resume_path = None
        if resume and not (store_dir(request) / f"{resume}.jsonl").exists():
            resume_path = self._find_store(resume)
        options = request.options
        return [self._send(Start(
            cwd=request.cwd, model=self._model, provider=self._provider,
            permissions=request.permissions, session_id=resume, store_dir=str(store_dir(request)),
            resume_path=resume_path, instructions=request.instructions,
            thinking=options.get("thinking") is True, limits=self._limits,
            prices=self._prices, context=self._context, tools=self._tools,
            daemon_tools=self._daemon_tools, autonomous=self._autonomy,
            compaction=self._compaction, confinement=request.confinement,
            telemetry=self._tracing.settings if self._tracing is not None else None))]

    def receive(self, frame: bytes, now: float) -> list[Output]:
        """One event from the worker; ``ProtocolError`` for a frame that is not one. An ask
        (answered beside the session, ``actors.native.daemon.asks``) that reaches it is dropped."""
        if is_ask(frame):
            return []
        try:
            event = decode_event(frame)
        except msgspec.DecodeError as exc:
            raise ProtocolError(f"the native worker sent an unreadable frame: {exc}") from None
        match event:
            case Init(vendor_session_id=vid):
                self._ready = True
                self._session_id = vid
            case Result():
                self._turn = False
                self._open.clear()
            case Checkpoint(resumed=True):
                self._turn = True
            case Permission(permission_id=pid):
                self._open.add(pid)
            case PermissionDecided(permission_id=pid):
                self._open.discard(pid)
            case _:
                pass
        return [event]

    def prompt(self, text: str, now: float) -> list[Output]:
        """Start a turn."""
        if not self._ready or self._turn:
            raise SessionBusy("the native worker cannot start a turn now (not ready or a turn runs)")
        self._turn = True
        tracing = self._tracing
        traceparent = None if tracing is None else tracing.context(self._request.session_id, self._model)
        return [self._send(Prompt(text=text, traceparent=traceparent))]

    def steer(self, text: str, now: float) -> list[Output] | None:
        """Into the running turn (before its next model call), or ``None`` when none runs."""
        if not self._turn:
            return None
        return [self._send(Steer(text=text))]

    def interrupt(self, now: float) -> list[Output]:
        """Abort the running turn; its open permission requests are withdrawn (the session has
        reported them cancelled)."""
        self._open.clear()
        return [self._send(Interrupt())] if self._turn else []

    def set_model(self, model: str, now: float) -> list[Output]:
        """Use ``model`` from the next model call on; ``BadRequest`` if it cannot be resolved."""
        provider = self._resolve(model)
        self._model, self._provider = model, provider
        return [self._send(SetModel(model=model, provider=provider))]

    def decide(self, permission_id: str, decision: Decision, now: float) -> list[Output]:
        """Answer the permission request ``permission_id``."""
        if permission_id not in self._open:
            raise UnknownPermission(f"the native worker has no open permission {permission_id!r}")
        self._open.discard(permission_id)
        return [self._send(Decide(permission_id=permission_id, decision=decision))]

    def compact(self, now: float) -> list[Output]:
        """``compact``: the idle worker compacts its history (a ``compaction`` event answers)."""
        return [self._send(Compact())]

    def goodbye(self, now: float) -> list[Output]:
        """``shutdown``: the worker aborts what runs, syncs its store and exits."""
        return [self._send(Shutdown())]

    def _resolve(self, model: str) -> ProviderSettings:
        request = self._request
        base_url = request.options.get("base_url")
        try:
            return resolve(model, providers=self._providers,
                           session_base_url=base_url if isinstance(base_url, str) else None,
                           session_env=request.env, daemon_env=self._daemon_env)
        except ModelSpecError as exc:
            raise BadRequest(exc.message, data={"code": exc.code}) from None

    def _send(self, command: Command) -> Send:
        return Send(data=self._framer.encode(encode_command(command)))


def autonomy(options: Mapping[str, Any]) -> Autonomy | None:
    """``options.autonomous`` as an ``Autonomy``, ``None`` without one; ``BadRequest`` if bad."""
    value = options.get("autonomous")
    if value is None:
        return None
    try:
        return msgspec.convert(value, Autonomy)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"options.autonomous: {exc}") from None


def _table(options: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = options.get(key) or {}
    if not isinstance(value, dict):
        raise BadRequest(f"options.{key} must be a table")
    return dict(value)


def _names(options: Mapping[str, Any], key: str) -> list[str] | None:
    value = options.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise BadRequest(f"options.{key} must be a list of tool names")
    return list(value)


def _compaction(config: CompactionConfig, override: dict[str, Any]) -> dict[str, Any]:
    """``[native.compaction]`` with the session's ``options.compaction`` keys over it."""
    merged = {**msgspec.to_builtins(config), **override}
    try:
        settings = msgspec.convert(merged, CompactionConfig)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"options.compaction: {exc}") from None
    return {} if settings == CompactionConfig() else msgspec.to_builtins(settings)
