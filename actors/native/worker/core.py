"""The native worker's core: commands in (``protocol.native``), corral events out. No stdio here.

``Worker.handle`` takes one command at a time and never blocks on a turn: a prompt starts the
turn as a task, and everything else (steer, interrupt, decisions, set_model) reaches the running
``Turn`` at once. ``emit`` is called synchronously with each event, in order.

* ``start`` (first, once): the workspace and tools, the gate, the model, the store and the ADK
  runner; the native session is loaded (``session_id`` given and found), copied in from
  ``resume_path``, or created; then ``init``. A failure is an ``error`` event and
  ``StartFailed`` (the worker exits: the daemon's restart policy takes over).
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
import logging
import os
import shutil
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event as AdkEvent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.tools.base_tool import BaseTool

from actors.native.accounting import TurnAccount
from actors.native.compaction import CompactionConfig
from actors.native.gate import Gate
from actors.native.models import ModelError, ProviderConfig, build_model, close_model
from actors.native.tools import TOOLS, Limits, Workspace
from protocol.events import Error, Event, Init, ToolKind, Usage
from protocol.native_context import SubagentDef
from protocol.native import (
    Ask, Command, Compact, Decide, DiagnosticsReport, Interrupt, McpResult, McpTools, Prompt,
    ProviderSettings, SetModel, Shutdown, Start, Steer,
)

from .agent import APP_NAME, USER_ID, AfterEdit, CodingTool, ModelSlot, build_app
from .autonomy import (
    INSTRUCTIONS, AutonomousRun, DoneBox, Ledger, ReportDone, continuation, ledger_path,
    start_run,
)
from .compactor import Compactor, model_summarizer
from .daemon_tools import DIAGNOSTICS, DiagnosticsTool, McpToolset, decorate
from .depth import Depth
from .skills import SKILL_TOOLS
from .events import EventMapper
from .link import DaemonLink
from .plugins import load_plugins
from .store import JsonlSessionService, StoreCorrupt, new_session_id
from .subagents import Subagents, Wiring
from .turn import Turn

__all__ = ["ModelFactory", "StartFailed", "Worker", "default_model"]

log = logging.getLogger("corral.native.worker")

ModelFactory = Callable[[ProviderSettings], BaseLlm]
"""Builds the ADK model for provider settings (tests pass a scripted one)."""

_SHUTDOWN_GRACE = 5.0
_SYSTEM = """You are corral's coding agent, working for the user in the directory {cwd}.
Use the tools to read, search, change and run things there: read a file before you change it,
prefer edit for small changes and write for new files, and use bash for commands (a fresh shell
each time, in that directory). Paths are relative to it. Be concise, and say what you did."""


class StartFailed(Exception):
    """``start`` could not set the worker up; the ``error`` event was already emitted."""


def default_model(settings: ProviderSettings) -> BaseLlm:
    """The real adapter for ``settings`` (``actors.native.models``)."""
    return build_model(msgspec.convert(msgspec.structs.asdict(settings), ProviderConfig))


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
        self._gate: Gate | None = None
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
            case Prompt(text=text):
                self._queued.append(text)
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
        if self._store is not None:
            self._store.close()
        self.finished.set()

    # --- start ------------------------------------------------------------------------

    async def _on_start(self, start: Start) -> None:
        if self._start is not None:
            self._emit(Error(code="native.protocol.started_twice", error_class="protocol",
                             message="start was sent twice; the second is ignored"))
            return
        try:
            limits = msgspec.convert(start.limits, Limits)
            workspace = Workspace(start.cwd, limits=limits)
            store = JsonlSessionService(start.store_dir)
            compaction = msgspec.convert(start.compaction, CompactionConfig)
            session_id = await self._open_session(store, start)
            llm = self._model_factory(start.provider)
        except (msgspec.ValidationError, OSError, StoreCorrupt, ValueError, ModelError) as exc:
            self._emit(Error(code="native.launch.start_failed", error_class="launch",
                             message=f"the native worker could not start: {exc}"))
            raise StartFailed(str(exc)) from exc
        self._start, self._store, self._session_id = start, store, session_id
        self._gate = Gate(start.permissions)
        self._start_settings = start.provider
        self._slot = ModelSlot(llm, start.model)
        self._models.append(llm)
        slot = self._slot
        self._compactor = Compactor(compaction, store_dir=start.store_dir, session_id=session_id,
                                    emit=self._emit, summarize=model_summarizer(lambda: slot.llm))
        link = self._link if start.daemon_tools else None
        after_edit: AfterEdit | None = None
        if link is not None:
            async def after_edit(path: str, text: str | None) -> str:
                return await decorate(link, path, text)
        system = _SYSTEM.format(cwd=workspace.root)
        if start.autonomous is not None:
            system += "\n\n" + INSTRUCTIONS.format(goal=start.autonomous.goal)
        # Discovery reads files: off the event loop.
        depth = await asyncio.to_thread(
            Depth, start.cwd, settings=start.context, environ=self._environ, emit=self._emit,
            system=system, session_instructions=start.instructions,
            active_tools=start.tools, session_id=session_id)
        tools: list[Any] = [*(CodingTool(spec, workspace, self._gate, after_edit) for spec in TOOLS),
                            *depth.tools]
        if start.autonomous is not None:
            tools.append(ReportDone(self._done))
        if link is not None:
            tools += [DiagnosticsTool(link), McpToolset(link, self._gate)]
        self._depth = depth
        if depth.hooks:
            self._compactor.before_compact = depth.on_compact
        plugins = load_plugins(self._emit)
        # Subagents get the session's tools but not its MCP toolset (listed per request).
        plain = [tool for tool in tools if isinstance(tool, BaseTool)]
        tools += self._subagents(start, depth, plain, plugins, _SYSTEM.format(cwd=workspace.root))
        app = build_app(self._slot, tools, instruction=depth.instruction,
                        before_model=[self._before_model, depth.before_model],
                        before_tool=depth.before_tool, after_tool=depth.after_tool,
                        after_model=self._after_model, thinking=start.thinking, plugins=plugins)
        self._runner = Runner(app=app, session_service=store)
        names = [tool.name for tool in tools if not isinstance(tool, McpToolset)]
        self._emit(Init(vendor_session_id=session_id, model=start.model, cwd=start.cwd,
                        tools=depth.tool_names(names)))
        self._resume_autonomous()

    def _subagents(self, start: Start, depth: Depth, tools: list[BaseTool],
                   plugins: list[BasePlugin], system: str) -> list[BaseTool]:
        """The session's subagent tools (``worker.subagents``); none without definitions."""
        if not depth.subagents:
            return []
        wiring = Wiring(system=system, before_model=[depth.before_model],
                        before_tool=depth.before_tool, after_tool=depth.after_tool,
                        plugins=plugins, kinds=_kinds(), on_usage=self._subagent_usage)
        return Subagents(depth.subagents, max_depth=start.context.subagent_depth, tools=tools,
                         slot=self._subagent_slot, wiring=wiring, emit=self._emit).tools

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

    async def _open_session(self, store: JsonlSessionService, start: Start) -> str:
        wanted = start.session_id
        if wanted:
            if not store.path(wanted).exists() and start.resume_path:
                shutil.copyfile(start.resume_path, store.path(wanted))
            if await store.get_session(app_name=APP_NAME, user_id=USER_ID,
                                       session_id=wanted) is not None:
                if store.truncated_bytes:
                    self._emit(Error(code="native.store.torn_line", error_class="unknown",
                                     message=f"native session {wanted}: a torn last line "
                                             f"({store.truncated_bytes} bytes) was dropped"))
                return wanted
            self._emit(Error(code="native.launch.resume_not_found", error_class="launch",
                             message=f"native session {wanted} was not found; "
                                     "a new one was started"))
        created = await store.create_session(app_name=APP_NAME, user_id=USER_ID,
                                             session_id=new_session_id())
        return created.id

    # --- turns ------------------------------------------------------------------------

    def _next_turn(self) -> None:
        start, runner, store, gate = self._start, self._runner, self._store, self._gate
        if self._turn is not None or not self._queued or start is None or runner is None \
                or store is None or gate is None:
            return
        kinds = _kinds()
        kinds[DIAGNOSTICS] = "read"
        hooks = self._depth if self._depth is not None and self._depth.hooks else None

        def make(text: str, emit: Callable[[Event], None]) -> Turn:
            return Turn(text, runner=runner, session_id=self._session_id, store=store,
                        mapper=EventMapper(kinds), gate=gate, account=TurnAccount(start.prices),
                        emit=emit, hooks=hooks)

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
        self._task = asyncio.get_running_loop().create_task(self._run_turn(turn))

    def _resume_autonomous(self) -> None:
        """A run a dead worker left unfinished (its ledger has no stop reason) goes on now."""
        start = self._start
        if start is None or start.autonomous is None:
            return
        ledger = Ledger.load(ledger_path(start.store_dir, self._session_id))
        if ledger is not None and ledger.stop_reason is None:
            self._resume = continuation(start.autonomous, ledger)
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


def _kinds() -> dict[str, ToolKind]:
    """The kind of each tool the session may have (others, subagents included, are ``other``)."""
    return {spec.name: spec.kind for spec in TOOLS} | dict.fromkeys(SKILL_TOOLS, "read")
