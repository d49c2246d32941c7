"""Subagents as tools: each named subagent is a tool of the same name that runs it on a task.

A call ``NAME {task}`` runs the subagent's own ADK app (its instructions, its model, its tools)
in a session of its own, ``PARENT_SESSION.NAME.N`` in memory, so nothing of it reaches the
parent's context except the answer: the task is its user message and the text of its final
response is the call's ``output`` (no final text: an ``error``). Its events are mapped like the
parent's and emitted into the session's stream with ``subagent`` set to its name, as they come.

* Tools: a definition that names none gets every tool of the session, subagent tools included;
  else those it names (unknown names are reported once, as a ``native.subagents.*`` warning).
* Depth: a context variable counts how deep the running call is; the session's own agent is
  level 0, its subagents run at 1, theirs at 2. A call that would run deeper than
  ``max_depth`` (``subagent_depth``, default 2) does not run: its result is an error.
* Permissions: the coding tools of a subagent ask the session's ``AskRules`` as the parent's do
  (allow rules, the mode, ``allow_always`` answers); a subagent cannot stop to ask the user,
  so a call that would ask does not run and its result says so.
* Usage: each model call of a subagent counts in the running turn's usage and cost. The policy, hook and
  active-tool callbacks of ``worker.depth`` and the plugins apply to subagents too.
* Interrupts cancel the parent's tool call, which cancels the subagent's run with it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from contextlib import aclosing
from contextvars import ContextVar
from typing import Any

import msgspec
from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.run_config import RunConfig
from google.adk.apps import App
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from actors.native.context.policy import tool_name
from actors.native.models import ModelError, usage_of
from actors.native.tools import call_tool
from protocol.events import Assistant, Error, Event, Thought, Tool, ToolKind, Usage
from protocol.native_context import SubagentDef

from .agent import (
    MODEL_KEY, USER_ID, AfterTool, BeforeModel, BeforeTool, CodingTool, ModelSlot, build_app,
)
from .events import EventMapper

__all__ = ["NO_ASK", "SubagentTool", "Subagents", "Wiring"]

NO_ASK = ("This call needs the user's approval, and a subagent cannot ask for it: it did not "
          "run. Say so in your answer, so that the caller can do it or ask.")

_LEVEL: ContextVar[int] = ContextVar("corral_subagent_level", default=0)
_RUN_CONFIG = RunConfig(streaming_mode=StreamingMode.SSE)
_TASK_SCHEMA = {"type": "object", "required": ["task"], "properties": {"task": {
    "type": "string", "description": "What the subagent should do, with everything it needs "
                                     "to know: it sees nothing of this conversation."}}}


class Wiring(msgspec.Struct, kw_only=True, frozen=True):
    """What subagent apps share with the session's: callbacks, plugins, how to map tool kinds."""

    system: str
    before_model: list[BeforeModel]
    before_tool: BeforeTool | None = None
    after_tool: AfterTool | None = None
    plugins: list[BasePlugin] = []
    kinds: Mapping[str, ToolKind] = {}
    on_usage: Callable[[str, Usage], None] | None = None
    """Counts each model call of a subagent (model NAME, usage) in the running turn."""


class SubagentTool(BaseTool):
    """The tool named after one subagent; its one argument is the task."""

    def __init__(self, name: str, definition: SubagentDef, owner: Subagents) -> None:
        super().__init__(name=name, description=definition.description
                         or f"Hand a task to the {name} subagent; it answers with its result.")
        self._owner = owner

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(name=self.name, description=self.description,
                                         parameters_json_schema=_TASK_SCHEMA)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Run the subagent on ``args["task"]`` (see the module docstring)."""
        return await self._owner.run(self.name, str(args.get("task") or ""),
                                     parent=tool_context.session.id)


class Subagents:
    """The subagents of one session: their tools and apps (built once, at start)."""

    def __init__(self, definitions: Mapping[str, SubagentDef], *, max_depth: int,
                 tools: Sequence[BaseTool], slot: Callable[[SubagentDef], ModelSlot],
                 wiring: Wiring, emit: Callable[[Event], None]) -> None:
        self._max_depth = max_depth
        self._emit = emit
        self._kinds = wiring.kinds
        self._on_usage = wiring.on_usage
        self._count = itertools.count(1)
        self.tools: list[BaseTool] = [SubagentTool(n, d, self) for n, d in definitions.items()]
        everything = [*(_no_ask(t) for t in tools), *self.tools]
        self._apps: dict[str, App] = {}
        for name, definition in definitions.items():
            chosen: list[BaseTool | BaseToolset] = list(everything)
            if definition.tools is not None:
                wanted = {tool_name(n) for n in definition.tools}
                chosen = [t for t in everything if t.name in wanted]
                unknown = sorted(wanted - {t.name for t in everything})
                if unknown:
                    emit(Error(code="native.subagents.unknown_tools", error_class="unknown",
                               message=f"subagent {name}: no tools named {', '.join(unknown)}"))
            self._apps[name] = build_app(
                slot(definition), chosen, instruction=_instruction(wiring.system, definition),
                before_model=wiring.before_model, before_tool=wiring.before_tool,
                after_tool=wiring.after_tool, thinking=False, plugins=wiring.plugins)

    async def run(self, name: str, task: str, *, parent: str) -> dict[str, Any]:
        """Run subagent ``name`` on ``task``: ``{"output": its final text}`` or ``{"error"}``."""
        level = _LEVEL.get() + 1
        if level > self._max_depth:
            return {"error": f"{name} did not run: subagents may only be {self._max_depth} "
                             f"deep, and this call would be level {level}"}
        if not task.strip():
            return {"error": f"{name} did not run: the task is empty"}
        token = _LEVEL.set(level)
        try:
            return await self._run(name, task, f"{parent}.{name}.{next(self._count)}")
        except ModelError as exc:
            self._emit(_tag(exc.event(), name))
            return {"error": f"{name} failed: {exc}"}
        finally:
            _LEVEL.reset(token)

    async def _run(self, name: str, task: str, session_id: str) -> dict[str, Any]:
        service = InMemorySessionService()
        await service.create_session(app_name=self._apps[name].name, user_id=USER_ID,
                                     session_id=session_id)
        runner = Runner(app=self._apps[name], session_service=service)
        mapper = EventMapper(self._kinds)
        final = ""
        message = types.Content(role="user", parts=[types.Part(text=task)])
        try:
            events = runner.run_async(user_id=USER_ID, session_id=session_id,
                                      new_message=message, run_config=_RUN_CONFIG)
            async with aclosing(events) as stream:
                async for event in stream:
                    for out in mapper.map(event):
                        self._emit(_tag(out, name))
                    if event.partial or event.author == "user":
                        continue
                    usage = usage_of(event)
                    if usage is not None and self._on_usage is not None:
                        model = str((event.custom_metadata or {}).get(MODEL_KEY, ""))
                        self._on_usage(model.partition("/")[2], usage)
                    if event.content:
                        text = "".join(p.text or "" for p in event.content.parts or []
                                       if p.text and not p.thought)
                        if text:
                            final = text
        finally:
            await runner.close()
        return {"output": final} if final else {"error": f"{name} ended without an answer"}


class _SubagentCodingTool(CodingTool):
    """A coding tool that refuses, rather than asks, when the ask rules say it asks."""

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        if self._ask_rules.asks(self.name):
            return {"error": NO_ASK}
        outcome = await call_tool(self._workspace, self.name, args)
        return {"error": outcome.text} if outcome.is_error else {"output": outcome.text}


def _no_ask(tool: BaseTool) -> BaseTool:
    if isinstance(tool, CodingTool):
        return _SubagentCodingTool(tool.spec, tool._workspace, tool._ask_rules)
    return tool


def _instruction(system: str, definition: SubagentDef) -> Callable[[Any], str]:
    text = "\n\n".join(part for part in (system, definition.instructions.strip()) if part)
    return lambda _context: text


def _tag(event: Event, name: str) -> Event:
    if isinstance(event, (Assistant, Thought, Tool, Error)) and event.subagent is msgspec.UNSET:
        return msgspec.structs.replace(event, subagent=name)
    return event

