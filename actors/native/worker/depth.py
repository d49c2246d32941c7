"""What surrounds the loop of one native session, as ADK callbacks: instruction files, the tool
policy they carry, and the session's active tool set.

* ``instruction``: the agent's instruction provider. ADK calls it for every model call, so a
  nested file activated by the previous tool call is in the very next request. The text is the
  base system prompt, the discovered instruction files least- to most-specific
  (``actors.native.context``), then the session's own ``instructions``. New warnings of
  discovery and assembly become ``error`` events with ``native.context.*`` codes (the turn
  goes on: they are warnings).
* ``before_model``: drops the declarations of tools the model may not see now (not in the
  active tool set, or hidden by a policy) from the request, and from its tool table, so a call
  to one is an unknown tool.
* ``before_tool``: rechecks the tool and its complete arguments against the active tool set and
  the policy, before the ask rules; a refusal is the call's error result. The policy is
  the active files' plus those of the skills loaded in the running turn (``end_turn`` drops
  these).
* ``after_tool``: the ``path`` a tool worked on is a touch, which may activate nested files.
* ``subagents``: the session's subagent definitions (``context.agents``; their warnings are
  reported with the instructions'); the worker makes them tools (``worker.subagents``).
* ``tools``: the skill tools (``worker.skills``) when the session has skills; discovery warnings
  of skills are reported with the instructions' at the first model call.
* command hooks (``[native.hooks]``, plus the repository's ``.claude/settings.json`` ones with
  ``claude_hooks``): ``PreToolUse`` runs in ``before_tool`` after the policy check (a block is
  the call's error result; ``updatedInput`` replaces the arguments), ``PostToolUse`` in
  ``after_tool`` (a block appends its reason to the result the model reads); a call that asks
  the user first runs its PreToolUse hooks once, before the question. Hook warnings
  (failures, timeouts) are ``error`` events with the code ``native.hooks.warning``.
  ``on_prompt``/``on_stop`` are the turn's UserPromptSubmit and Stop hooks (``turn.TurnHooks``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, get_args

import msgspec

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from actors.native.context import (
    Discovery, Instructions, PolicySet, ToolPolicy, discover_skills, repo_root,
)
from actors.native.context.agents import discover_subagents
from actors.native.context.documents import ContextWarning, read_text
from protocol.events import Error, Event
from protocol.native_context import ContextSettings, HookEvent, HookMatcher

from .hookrun import Hooks
from .skills import skill_tools

__all__ = ["Depth"]


class Depth:
    """See the module docstring."""

    def __init__(self, cwd: str, *, settings: ContextSettings, environ: Mapping[str, str],
                 emit: Callable[[Event], None], system: str, session_instructions: str | None,
                 active_tools: Collection[str] | None = None, session_id: str = "") -> None:
        self._emit = emit
        self._system = system
        self._own = session_instructions
        self._active = None if active_tools is None else frozenset(active_tools)
        self.instructions: Instructions | None = None
        home = Path(environ["HOME"]) if environ.get("HOME") else None
        if settings.instructions:
            codex = environ.get("CODEX_HOME")
            self.instructions = Instructions(Discovery(
                Path(cwd), home=home, settings=settings,
                codex_home=Path(codex) if codex else None))
        self.catalog = discover_skills(settings, home=home, repo_root=repo_root(Path(cwd)),
                                       environ=environ)
        self._turn_policies: list[ToolPolicy] = []
        self.tools = skill_tools(self.catalog, settings.max_file_bytes,
                                 self._turn_policies.append)
        self._unreported = list(self.catalog.warnings)
        self.subagents, found = discover_subagents(settings, home=home,
                                                   repo_root=repo_root(Path(cwd)))
        self._unreported += found
        hooks = dict(settings.hooks)
        if settings.claude_hooks:
            for event, matchers in self._project_hooks(repo_root(Path(cwd))).items():
                hooks[event] = [*hooks.get(event, []), *matchers]
        self.hooks = Hooks(hooks, cwd=cwd, session_id=session_id, environ=environ)
        self._rewrites: dict[str, dict[str, Any]] = {}
        """Arguments a PreToolUse hook rewrote, by call id, until the call runs."""

    @property
    def policy(self) -> PolicySet:
        """The active instruction files' policies and those of skills loaded in this turn."""
        files = self.instructions.policy.policies if self.instructions is not None else []
        return PolicySet([*files, *self._turn_policies])

    def end_turn(self) -> None:
        """The turn ended: the policies of the skills it loaded no longer apply, and rewrites of
        calls it left unanswered are dropped."""
        self._turn_policies.clear()
        self._rewrites.clear()

    def tool_names(self, names: list[str]) -> list[str]:
        """The tools of ``names`` the model may see now."""
        names = [n for n in names if self._active is None or n in self._active]
        return self.policy.visible(names)

    def instruction(self, _context: ReadonlyContext | None = None) -> str:
        """The system instruction for the next model call (see the module docstring)."""
        parts = [self._system]
        warnings, self._unreported = self._unreported, []
        if self.instructions is not None:
            assembled, fresh = self.instructions.assemble()
            warnings += fresh
            if assembled.text:
                parts.append(assembled.text)
        for warning in warnings:
            self._emit(Error(code=f"native.{warning.code}", error_class="unknown",
                             message=str(warning)))
        if self._own:
            parts.append(self._own)
        return "\n\n".join(parts)

    async def before_model(self, context: CallbackContext,
                           request: LlmRequest) -> LlmResponse | None:
        """Leave out the declarations of tools the model may not see now."""
        shown = set(self.tool_names(list(request.tools_dict)))
        for name in [n for n in request.tools_dict if n not in shown]:
            del request.tools_dict[name]
        kept: list[Any] = []
        for tool in request.config.tools or []:
            if isinstance(tool, types.Tool) and tool.function_declarations:
                tool.function_declarations = [d for d in tool.function_declarations
                                              if d.name in shown]
                if not tool.function_declarations:
                    continue
            kept.append(tool)
        if request.config.tools:
            request.config.tools = kept
        return None

    async def before_tool(self, tool: BaseTool, args: dict[str, Any],
                          tool_context: ToolContext) -> dict[str, Any] | None:
        """``None`` lets the call run; else its error result."""
        if self._active is not None and tool.name not in self._active:
            return {"error": f"{tool.name} is not among this session's tools"}
        reason = self.policy.check(tool.name, args)
        if reason is not None:
            return {"error": f"{reason}; this call did not run"}
        if not self.hooks:
            return None
        call_id = tool_context.function_call_id or ""
        if tool_context.tool_confirmation is not None:
            # The call asked the user and now resumes: its hooks ran before the question (ADK
            # replays the call's original arguments, so a rewrite is applied again).
            rewrite = self._rewrites.pop(call_id, None)
        else:
            outcome, warnings = await self.hooks.run("PreToolUse", tool=tool.name,
                                                     tool_input=dict(args))
            self._warn(warnings)
            if outcome.block:
                return {"error": f"a PreToolUse hook blocked this call: {outcome.reason}"}
            rewrite = outcome.updated_input
            if rewrite is not None and call_id:
                self._rewrites[call_id] = rewrite
        if rewrite is not None:
            args.clear()
            args.update(rewrite)
        return None

    async def after_tool(self, tool: BaseTool, args: dict[str, Any], tool_context: ToolContext,
                         response: dict[str, Any]) -> dict[str, Any] | None:
        """A tool's ``path`` argument is a touch; PostToolUse hooks may add to the result."""
        path = args.get("path")
        if self.instructions is not None and isinstance(path, str) and path:
            self.instructions.touch(path)
        if not self.hooks:
            return None
        outcome, warnings = await self.hooks.run("PostToolUse", tool=tool.name,
                                                 tool_input=dict(args), tool_response=response)
        self._warn(warnings)
        if not outcome.block:
            return None
        key = "error" if "error" in response else "output"
        return {key: f"{response.get(key, '')}\n\nA PostToolUse hook objected: {outcome.reason}"}

    async def on_prompt(self, text: str) -> str | None:
        """UserPromptSubmit: the reason to block the prompt, or ``None``."""
        outcome, warnings = await self.hooks.run("UserPromptSubmit", prompt=text)
        self._warn(warnings)
        return outcome.reason if outcome.block else None

    async def on_compact(self, trigger: str) -> None:
        """PreCompact, before a compaction takes effect (``trigger``: ``auto`` or ``manual``);
        as in Claude Code it cannot stop the compaction, only warn."""
        _, warnings = await self.hooks.run("PreCompact", match=trigger, trigger=trigger,
                                           custom_instructions="")
        self._warn(warnings)

    async def on_stop(self, active: bool) -> str | None:
        """Stop: the reason to go on (the next prompt), or ``None`` to end the turn."""
        outcome, warnings = await self.hooks.run("Stop", stop_hook_active=active)
        self._warn(warnings)
        return outcome.reason if outcome.block else None

    def _warn(self, warnings: list[str]) -> None:
        for warning in warnings:
            self._emit(Error(code="native.hooks.warning", error_class="unknown", message=warning))

    def _project_hooks(self, root: Path) -> dict[HookEvent, list[HookMatcher]]:
        """The hooks of ``ROOT/.claude/settings.json`` that corral knows (others are ignored)."""
        path = root / ".claude" / "settings.json"
        text = read_text(path, 1 << 20, [])
        try:
            raw = json.loads(text).get("hooks", {}) if text else {}
            known = {k: v for k, v in raw.items() if k in get_args(HookEvent)}
            return msgspec.convert(known, dict[HookEvent, list[HookMatcher]])
        except (ValueError, AttributeError, msgspec.ValidationError) as exc:
            self._unreported.append(ContextWarning(code="hooks.unreadable", path=str(path),
                                                   message=f"hooks ignored: {exc}"))
            return {}
