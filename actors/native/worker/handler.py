"""The native worker's command handler: commands in (``protocol.native``), corral events out. No
stdio here.

``Worker.handle`` takes one command at a time and never blocks on a turn: a prompt starts the
turn as a task, and everything else (steer, interrupt, decisions, set_model) reaches the running
``Turn`` at once. ``emit`` is called synchronously with each event, in order.

* ``start`` (first, once): the workspace and tools, the ask rules, the model, the store and the ADK
  runner; the native session is loaded (``session_id`` given and found), copied in from
  ``resume_path``, or created; then ``init``. A failure is an ``error`` event and
  ``StartFailed`` (the worker exits: the daemon's restart policy takes over). ``assembly``
  builds all of it; the worker keeps what it built.
* ``prompt``: starts a turn; during a turn (a prompt that crossed the end of the previous one)
  it waits for that turn to end. ``steer``: into the running turn; with none running (a steer
  that lost the race with the turn's end) it starts one, as a prompt would. Steering prompts
  the ending turn never gave the model (it was interrupted or failed first) become the next
  turn, so no prompt the daemon reported delivered is dropped.
* ``set_model``: the next model call uses the new model (old ones are closed at shutdown).
* ``shutdown``: interrupts the turn, waits for its ``result``, closes models and the store.
* answers (``mcp.tools``, ``mcp.result``, ``lsp.report``) go to the ``DaemonLink`` whose ask
  they answer. With ``start.daemon_tools`` (and a ``send_ask`` to reach the daemon) the agent
  also gets the session's MCP tools and ``diagnostics``, and write/edit results are decorated
  with diagnostics (``daemon_tools``).
* ``compact``: compacts the idle session's history (``compactor.Compactor``), answered by a
  ``compaction`` event; during a turn, an ``error`` event. Auto compaction runs in the
  before-model callback, after steering prompts are injected.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import msgspec
from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event as AdkEvent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner

from actors.native.worker.accounting import TurnAccount
from actors.native.worker.askrules import AskRules
from actors.native.models import ModelError, close_model
from actors.native.models.tracing import TURN
from protocol.events import Error, Event, Init, Usage
from protocol.native_context import SubagentDef
from protocol.native import (
    Ask, Command, Compact, Decide, DiagnosticsReport, Interrupt, McpResult, McpTools, Prompt,
    ProviderSettings, SetModel, Shutdown, Start, Steer, WorkerTelemetry,
)

from .agent import APP_NAME, USER_ID, ModelSlot
from .assembly import (
    ModelFactory, StartFailed, WorkerHooks, compose, default_model, open_start, tool_kinds,
)
from .autonomy import AutonomousRun, DoneBox, RunProgress, continuation, progress_path, start_run
from .compactor import Compactor, model_summarizer
from .daemon_tools import DIAGNOSTICS
from .depth import Depth
from .events import EventMapper
from .link import DaemonLink
from .store import JsonlSessionService
from .turn import Turn

__all__ = ["ModelFactory", "StartFailed", "Worker", "default_model"]

log = logging.getLogger("corral.native.worker")

_SHUTDOWN_GRACE = 5.0


class Worker:
    """See the module docstring."""

    def __init__(self, emit: Callable[[Event], None], *,
                 model_factory: ModelFactory = default_model,
                 environ: Mapping[str, str] | None = None,
                 send_ask: Callable[[Ask], None] | None = None) -> None:
        self._emit = emit
        self._environ = os.environ if environ is None else environ
        self._link = DaemonLink(send_ask) if send_ask is not None else None
        self._model_factory = model_factory
        self._start: Start | None = None
        self._runner: Runner | None = None
        self._store: JsonlSessionService | None = None
        self._slot: ModelSlot | None = None
        self._models: list[BaseLlm] = []
        self._ask_rules: AskRules | None = None
        self._depth: Depth | None = None
        self._compactor: Compactor | None = None
        self._start_settings: ProviderSettings | None = None
        self._session_id = ""
        self._turn: Turn | AutonomousRun | None = None
        self._done = DoneBox()
        self._task: asyncio.Task[None] | None = None
        self._queued: deque[str] = deque()
        self._resume: str | None = None
        self.finished = asyncio.Event()
        self._tracing: WorkerTracing | None = None
        """The model calls' tracer, when the daemon exports telemetry (``Start.telemetry``)."""
        self._traceparent: str | None = None
        """The trace context of the turn the last ``Prompt`` starts."""

    @property
    def session_id(self) -> str:
        """The native session id (empty before ``start``)."""
        return self._session_id

    @property
    def turn(self) -> Turn | AutonomousRun | None:
        """The running turn, if any."""
        return self._turn

    async def handle(self, command: Command) -> None:
        """Act on one command (see the module docstring); raises ``StartFailed``."""
        match command:
            case McpTools() | McpResult() | DiagnosticsReport():
                if self._link is not None:
                    self._link.answer(command)
            case Start():
                await self._on_start(command)
            case _ if self._start is None:
                self._emit(Error(code="native.protocol.not_started", error_class="protocol",
                                 message=f"{type(command).__name__} before start"))
            case Prompt(text=text, traceparent=traceparent):
                self._queued.append(text)
                self._traceparent = traceparent
                self._next_turn()
            case Steer(text=text):
                if self._turn is not None and not self._queued:
                    self._turn.steer(text)
                else:
                    self._queued.append(text)
                    self._next_turn()
            case Interrupt():
                if self._turn is not None:
                    self._turn.interrupt()
            case Decide(permission_id=pid, decision=decision):
                if self._turn is None or not self._turn.decide(pid, decision):
                    log.warning("decision for %s, which no turn is waiting for", pid)
            case SetModel(provider=settings):
                self._set_model(settings)
            case Shutdown():
                await self.shutdown()
            case Compact():
                await self._compact()

    async def shutdown(self) -> None:
        """Interrupt the turn (bounded wait for its result), close models and the store."""
        self._queued.clear()
        if self._link is not None:
            self._link.close()
        task = self._task
        if task is not None and self._turn is not None:
            self._turn.interrupt()
            done, _ = await asyncio.wait([task], timeout=_SHUTDOWN_GRACE)
            if not done:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self._compactor is not None:
            self._compactor.close()
        for llm in self._models:
            await close_model(llm)
        if self._tracing is not None:  # the last model calls' spans, exported (bounded)
            await self._tracing.aclose()
            self._tracing = None
        if self._store is not None:
            self._store.close()
        self.finished.set()

    # --- start ------------------------------------------------------------------------

    async def _on_start(self, start: Start) -> None:
        """Open the session and compose the agent (``assembly``), then ``init``."""
        if self._start is not None:
            self._emit(Error(code="native.protocol.started_twice", error_class="protocol",
                             message="start was sent twice; the second is ignored"))
            return
        opened = await open_start(start, model_factory=self._model_factory, emit=self._emit)
        self._start, self._store, self._session_id = start, opened.store, opened.session_id
        if start.telemetry is not None:
            self._tracing = _tracing(start.telemetry)
        self._ask_rules = AskRules(start.permissions)
        self._start_settings = start.provider
        self._slot = ModelSlot(opened.llm, start.model)
        self._models.append(opened.llm)
        slot = self._slot
        self._compactor = Compactor(opened.compaction, store_dir=start.store_dir,
                                    session_id=opened.session_id, emit=self._emit,
                                    summarize=model_summarizer(lambda: slot.llm))
        hooks = WorkerHooks(before_model=self._before_model, after_model=self._after_model,
                            subagent_slot=self._subagent_slot,
                            subagent_usage=self._subagent_usage)
        composed = await compose(start, opened, ask_rules=self._ask_rules, slot=slot,
                                 compactor=self._compactor, link=self._link, done=self._done,
                                 environ=self._environ, emit=self._emit, hooks=hooks)
        self._depth, self._runner = composed.depth, composed.runner
        self._emit(Init(vendor_session_id=opened.session_id, model=start.model, cwd=start.cwd,
                        tools=composed.tool_names))
        self._resume_autonomous()

    def _subagent_usage(self, model: str, usage: Usage) -> None:
        if self._turn is not None:
            self._turn.add_usage(model, usage)

    def _subagent_slot(self, definition: SubagentDef) -> ModelSlot:
        """The session's slot, or one of the model a subagent names (of the same provider)."""
        slot, settings = self._slot, self._start_settings
        assert slot is not None and settings is not None
        spec = definition.model
        if not spec or spec == "inherit" or spec == slot.spec:
            return slot
        provider, _, name = spec.partition("/")
        try:
            if provider != settings.provider or not name:
                raise ValueError(f"not a model of the session's provider {settings.provider}")
            llm = self._model_factory(msgspec.structs.replace(settings, model=name))
        except (ModelError, ValueError, KeyError) as exc:
            self._emit(Error(code="native.subagents.model_ignored", error_class="unknown",
                             message=f"subagent model {spec}: {exc}; the session's is used"))
            return slot
        self._models.append(llm)
        return ModelSlot(llm, spec)

    # --- turns ------------------------------------------------------------------------

    def _next_turn(self) -> None:
        start, runner, store, ask_rules = self._start, self._runner, self._store, self._ask_rules
        if self._turn is not None or not self._queued or start is None or runner is None \
                or store is None or ask_rules is None:
            return
        kinds = tool_kinds()
        kinds[DIAGNOSTICS] = "read"
        hooks = self._depth if self._depth is not None and self._depth.hooks else None

        def make(text: str, emit: Callable[[Event], None]) -> Turn:
            return Turn(text, runner=runner, session_id=self._session_id, store=store,
                        mapper=EventMapper(kinds), ask_rules=ask_rules,
                        account=TurnAccount(start.prices), emit=emit, hooks=hooks)

        text = self._queued.popleft()
        turn: Turn | AutonomousRun
        if start.autonomous is None:
            turn = make(text, self._emit)
        else:
            turn = start_run(text, autonomy=start.autonomous, store_dir=start.store_dir,
                             session_id=self._session_id, box=self._done, make_turn=make,
                             emit=self._emit, resuming=text == self._resume)
            self._resume = None
        self._turn = turn
        context = contextvars.copy_context()
        if self._tracing is not None and self._traceparent is not None:
            context.run(TURN.set, self._tracing.turn_trace(self._traceparent))
        self._traceparent = None
        self._task = asyncio.get_running_loop().create_task(self._run_turn(turn), context=context)

    def _resume_autonomous(self) -> None:
        """A run a dead worker left unfinished (its progress file has no stop reason) goes on now."""
        start = self._start
        if start is None or start.autonomous is None:
            return
        progress = RunProgress.load(progress_path(start.store_dir, self._session_id))
        if progress is not None and progress.stop_reason is None:
            self._resume = continuation(start.autonomous, progress)
            self._queued.append(self._resume)
            self._next_turn()

    async def _run_turn(self, turn: Turn | AutonomousRun) -> None:
        try:
            await turn.run()
        finally:
            self._turn = None
            self._task = None
            if self._depth is not None:
                self._depth.end_turn()
        left = turn.leftover()
        if left:  # steered after the turn's end was decided (an interrupt, an error): not lost
            self._queued.appendleft("\n\n".join(left))
        self._next_turn()

    async def _before_model(self, context: CallbackContext,
                            request: LlmRequest) -> LlmResponse | None:
        """Inject the running turn's steering prompts before this model call, then compact."""
        turn, store = self._turn, self._store
        content = turn.take_steers() if turn is not None else None
        if content is not None and store is not None:
            event = AdkEvent(invocation_id=context.invocation_id, author="user", content=content)
            await store.append_event(context.session, event)
            request.contents.append(content)
        if self._compactor is not None:
            await self._compactor.before_model(request)
        return None

    async def _after_model(self, context: CallbackContext,
                           response: LlmResponse) -> LlmResponse | None:
        if self._compactor is not None:
            self._compactor.after_model(response)
        return None

    async def _compact(self) -> None:
        """``compact``: the idle session's history (see the module docstring)."""
        store, compactor = self._store, self._compactor
        if self._turn is not None or self._queued:
            self._emit(Error(code="session_busy", error_class="protocol",
                             message="cannot compact while a turn runs"))
            return
        if store is None or compactor is None:
            return
        session = await store.get_session(app_name=APP_NAME, user_id=USER_ID,
                                          session_id=self._session_id)
        if session is not None:
            await compactor.compact_history(
                [e.content for e in session.events if e.content is not None and not e.partial])

    def _set_model(self, settings: ProviderSettings) -> None:
        """Point the slot at the new model; on failure keep the old one and say why."""
        if self._slot is None:
            return
        try:
            llm = self._model_factory(settings)
        except (ModelError, ValueError) as exc:
            self._emit(Error(code="native.launch.set_model_failed", error_class="launch",
                             message=f"cannot use {settings.spec}: {exc}"))
            return
        self._models.append(llm)
        self._slot.llm, self._slot.spec = llm, settings.spec


if TYPE_CHECKING:
    from .tracing import WorkerTracing


def _tracing(settings: WorkerTelemetry) -> WorkerTracing | None:
    """The worker's tracer (the SDK loads only now), or ``None`` without ``corral[otel]``."""
    try:
        from .tracing import WorkerTracing
    except ImportError as exc:
        log.warning("telemetry: the model calls are not traced (%s); install corral[otel]", exc)
        return None
    return WorkerTracing(settings)
