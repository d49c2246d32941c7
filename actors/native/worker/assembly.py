"""How the native worker's ``start`` is put together: the session opened, then the agent composed.

``open_start`` does everything that may fail for a reason the daemon should hear about (bad
limits or compaction settings, an unreadable store, a model the provider cannot build), in
this order: the store (with the native session ``resume_path`` names copied in: before the
sandbox, if any, confines the worker and hides the earlier session's directory), the
confinement, tool limits and workspace, the compaction settings, the native session (loaded or
created), the model. Any of those failures is an
``error`` event and ``StartFailed``.

``compose`` then assembles the agent from the parts, each from its own module:

* the system prompt (``SYSTEM``, plus the autonomy instructions for an autonomous run);
* ``depth``: project instructions, skills, hooks, subagent definitions (read off the loop);
* the tools: the coding tools (with write/edit results decorated with diagnostics when the
  session has daemon tools), depth's tools, ``report_done`` for an autonomous run, and the
  daemon's ``diagnostics`` and MCP toolset (``daemon_tools``);
* compaction hooks (``PreCompact`` through depth), ``plugins``, and ``subagents`` (which get
  the session's plain tools, not its MCP toolset, and the worker's callbacks);
* the ADK app and its ``Runner``, with the worker's before/after-model callbacks first.

The worker keeps the state; this module only builds. ``tool_kinds`` is the tool-kind table
the worker's event mappers and the subagents share.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import msgspec
from google.adk.models.base_llm import BaseLlm
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.tools.base_tool import BaseTool

from actors.native.compaction import CompactionConfig
from actors.native.worker.askrules import AskRules
from actors.native.models import ModelError, ProviderConfig, build_model
from actors.native.tools import TOOLS, Limits, Workspace
from protocol.events import Error, Event, ToolKind, Usage
from protocol.native import ProviderSettings, Start
from protocol.native_context import SubagentDef

from .confinement import ConfinementFailed, confine, shell_env
from .agent import APP_NAME, USER_ID, AfterEdit, AfterModel, BeforeModel, CodingTool, ModelSlot, build_app
from .autonomy import INSTRUCTIONS, DoneBox, ReportDone
from .compactor import Compactor
from .daemon_tools import DiagnosticsTool, McpToolset, decorate
from .depth import Depth
from .link import DaemonLink
from .plugins import load_plugins
from .skills import SKILL_TOOLS
from .store import JsonlSessionService, StoreCorrupt, new_session_id
from .subagents import Subagents, Wiring

__all__ = ["SYSTEM", "Composition", "ModelFactory", "Opened", "StartFailed", "WorkerHooks",
           "compose", "default_model", "open_start", "tool_kinds"]

ModelFactory = Callable[[ProviderSettings], BaseLlm]
"""Builds the ADK model for provider settings (tests pass a scripted one)."""

SYSTEM = """You are corral's coding agent, working for the user in the directory {cwd}.
Use the tools to read, search, change and run things there: read a file before you change it,
prefer edit for small changes and write for new files, and use bash for commands (a fresh shell
each time, in that directory). Paths are relative to it. Be concise, and say what you did."""


class StartFailed(Exception):
    """``start`` could not set the worker up; the ``error`` event was already emitted."""


def default_model(settings: ProviderSettings) -> BaseLlm:
    """The real adapter for ``settings`` (``actors.native.models``)."""
    return build_model(msgspec.convert(msgspec.structs.asdict(settings), ProviderConfig))


class Opened(NamedTuple):
    """What ``open_start`` made: the workspace, the store, the session in it, and the model."""

    workspace: Workspace
    store: JsonlSessionService
    compaction: CompactionConfig
    session_id: str
    llm: BaseLlm


class WorkerHooks(NamedTuple):
    """The worker's own callbacks the composed agent calls back into."""

    before_model: BeforeModel
    """Runs first before each model call (steering prompts, then compaction)."""
    after_model: AfterModel
    subagent_slot: Callable[[SubagentDef], ModelSlot]
    """The model slot a subagent runs on."""
    subagent_usage: Callable[[str, Usage], None]
    """Counts a subagent's model call in the running turn."""


class Composition(NamedTuple):
    """What ``compose`` made: the depth layer, the ADK runner, and the tool names ``init`` lists."""

    depth: Depth
    runner: Runner
    tool_names: list[str]


async def open_start(start: Start, *, model_factory: ModelFactory,
                     emit: Callable[[Event], None]) -> Opened:
    """Open what ``start`` names (see the module docstring); raises ``StartFailed``."""
    try:
        # The store first: made before the rules that grant it, and an earlier corral session's
        # conversation copied in while its directory is still in sight (the sandbox hides it).
        store = JsonlSessionService(start.store_dir)
        _copy_resumed(store, start)
        shell_confine = confine(start.confinement) if start.confinement is not None else None
        limits = msgspec.convert(start.limits, Limits)
        workspace = Workspace(start.cwd, limits=limits, confine=shell_confine,
                              env=shell_env(start.confinement))
        compaction = msgspec.convert(start.compaction, CompactionConfig)
        session_id = await _open_session(store, start, emit)
        llm = model_factory(start.provider)
    except (msgspec.ValidationError, OSError, StoreCorrupt, ValueError, ModelError, ConfinementFailed) as exc:
        emit(Error(code="native.launch.start_failed", error_class="launch",
                   message=f"the native worker could not start: {exc}"))
        raise StartFailed(str(exc)) from exc
    return Opened(workspace, store, compaction, session_id, llm)


async def compose(start: Start, opened: Opened, *, ask_rules: AskRules, slot: ModelSlot,
                  compactor: Compactor, link: DaemonLink | None, done: DoneBox,
                  environ: Mapping[str, str], emit: Callable[[Event], None],
                  hooks: WorkerHooks) -> Composition:
    """Assemble the session's agent (see the module docstring); ``link`` is used only when
    ``start.daemon_tools`` asks for the daemon's tools."""
    workspace = opened.workspace
    link = link if start.daemon_tools else None
    after_edit: AfterEdit | None = None
    if link is not None:
        async def after_edit(path: str, text: str | None) -> str:
            return await decorate(link, path, text)
    system = SYSTEM.format(cwd=workspace.root)
    if start.autonomous is not None:
        system += "\n\n" + INSTRUCTIONS.format(goal=start.autonomous.goal)
    # Discovery reads files: off the event loop.
    depth = await asyncio.to_thread(
        Depth, start.cwd, settings=start.context, environ=environ, emit=emit,
        system=system, session_instructions=start.instructions,
        active_tools=start.tools, session_id=opened.session_id)
    tools: list[Any] = [*(CodingTool(spec, workspace, ask_rules, after_edit) for spec in TOOLS),
                        *depth.tools]
    if start.autonomous is not None:
        tools.append(ReportDone(done))
    if link is not None:
        tools += [DiagnosticsTool(link), McpToolset(link, ask_rules)]
    if depth.hooks:
        compactor.before_compact = depth.on_compact
    plugins = load_plugins(emit)
    # Subagents get the session's tools but not its MCP toolset (listed per request).
    plain = [tool for tool in tools if isinstance(tool, BaseTool)]
    tools += _subagent_tools(start, depth, plain, plugins, SYSTEM.format(cwd=workspace.root),
                             hooks=hooks, emit=emit)
    app = build_app(slot, tools, instruction=depth.instruction,
                    before_model=[hooks.before_model, depth.before_model],
                    before_tool=depth.before_tool, after_tool=depth.after_tool,
                    after_model=hooks.after_model, thinking=start.thinking, plugins=plugins)
    runner = Runner(app=app, session_service=opened.store)
    names = [tool.name for tool in tools if not isinstance(tool, McpToolset)]
    return Composition(depth, runner, depth.tool_names(names))


def tool_kinds() -> dict[str, ToolKind]:
    """The kind of each tool the session may have (others, subagents included, are ``other``)."""
    return {spec.name: spec.kind for spec in TOOLS} | dict.fromkeys(SKILL_TOOLS, "read")


def _subagent_tools(start: Start, depth: Depth, tools: list[BaseTool], plugins: list[BasePlugin],
                    system: str, *, hooks: WorkerHooks,
                    emit: Callable[[Event], None]) -> list[BaseTool]:
    """The session's subagent tools (``worker.subagents``); none without definitions."""
    if not depth.subagents:
        return []
    wiring = Wiring(system=system, before_model=[depth.before_model],
                    before_tool=depth.before_tool, after_tool=depth.after_tool,
                    plugins=plugins, kinds=tool_kinds(), on_usage=hooks.subagent_usage)
    return Subagents(depth.subagents, max_depth=start.context.subagent_depth, tools=tools,
                     slot=hooks.subagent_slot, wiring=wiring, emit=emit).tools


def _copy_resumed(store: JsonlSessionService, start: Start) -> None:
    """Copy the session ``start`` names in from ``resume_path`` (an earlier corral session's
    store) when this store lacks it."""
    wanted = start.session_id
    if wanted and start.resume_path and not store.path(wanted).exists():
        shutil.copyfile(start.resume_path, store.path(wanted))


async def _open_session(store: JsonlSessionService, start: Start,
                        emit: Callable[[Event], None]) -> str:
    """The native session ``start`` names (copied in already, ``_copy_resumed``), else a new one."""
    wanted = start.session_id
    if wanted:
        if await store.get_session(app_name=APP_NAME, user_id=USER_ID,
                                   session_id=wanted) is not None:
            if store.truncated_bytes:
                emit(Error(code="native.store.torn_line", error_class="unknown",
                           message=f"native session {wanted}: a torn last line "
                                   f"({store.truncated_bytes} bytes) was dropped"))
            return wanted
        emit(Error(code="native.launch.resume_not_found", error_class="launch",
                   message=f"native session {wanted} was not found; "
                           "a new one was started"))
    created = await store.create_session(app_name=APP_NAME, user_id=USER_ID,
                                         session_id=new_session_id())
    return created.id
