"""corral events as ACP ``session/update`` notifications (pure; one ``Updates`` per session).

=========================  ==================================================================
corral event               ACP update
=========================  ==================================================================
``assistant``              ``agent_message_chunk`` (a whole message that repeats the deltas
                           just streamed is the harness's consolidated copy: not sent again)
``thought``                ``agent_thought_chunk``, likewise
``user``                   ``user_message_chunk`` (``Turns`` leaves out the editor's own)
``tool`` started           ``tool_call``: ``toolCallId`` is the call id, ``title`` the tool's
                           name and what it works on, ``kind`` (below), ``status:
                           in_progress``, ``rawInput``, ``locations`` where a path is known
``tool`` updated           ``tool_call_update`` ``in_progress`` with the output so far
``tool`` completed         ``tool_call_update`` ``completed`` (``failed`` when ``is_error``),
                           the output as text content and ``rawOutput``; an edit whose old and
                           new text are in its input adds a ``diff`` per change
plan tools                 ``plan``: the entries of ``plan`` (an ACP agent's), ``TodoWrite``
                           (Claude Code), ``update_plan`` (Codex), ``write_todos`` (Gemini)
``result``                 ``usage_update``: ``used`` the turn's tokens, ``size`` the context
                           window where a (native) ``compaction`` event told it, else 0,
                           ``cost`` in USD, corral's counts in ``_meta.corral``
``init``                   ``available_commands_update`` with its ``/commands`` (ACP agents,
                           OpenCode, Claude Code report them among their tools)
``permissions``            ``current_mode_update`` (the mode ids are corral's mode names)
=========================  ==================================================================

Tool kinds: ``read``, ``edit``, ``search`` stay; ``exec`` is ``execute``; a tool whose name
says ``delete``/``move``/``fetch``/``think`` (``rm``, ``mv``, ``WebFetch``, …) gets that kind;
the rest (``mcp``, ``other``) is ``other``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Final

from protocol.events import (
    Assistant, Compaction, Event, Init, PermissionsChanged, Result, Thought, Tool, User,
)

from .schema import (
    AvailableCommand, Content, Cost, Diff, Location, PlanEntry, TextBlock, Update,
)

__all__ = ["Updates", "acp_kind", "paths_of", "title_of"]

_NAMED_KINDS: Final = (
    ("delete", ("delete", "remove", "rm", "unlink")),
    ("move", ("move", "rename", "mv")),
    ("fetch", ("fetch", "webfetch", "web_fetch", "websearch", "web_search", "curl")),
    ("think", ("think", "thinking")),
)
_KINDS: Final = {"read": "read", "edit": "edit", "search": "search", "exec": "execute"}
_PATH_KEYS: Final = ("path", "file_path", "filePath", "notebook_path", "filename")
_OLD_KEYS: Final = ("old_string", "oldText", "old_text", "old_str", "old")
_NEW_KEYS: Final = ("new_string", "newText", "new_text", "new_str", "new", "content")
_SUMMARY_KEYS: Final = ("command", "cmd", *_PATH_KEYS, "pattern", "query", "url", "description")
_PLAN_TOOLS: Final = {"plan": "entries", "TodoWrite": "todos", "update_plan": "plan",
                      "write_todos": "todos", "todowrite": "todos"}
_PLAN_STATUS: Final = {"in_progress": "in_progress", "inprogress": "in_progress",
                       "completed": "completed", "done": "completed", "cancelled": "completed"}


def acp_kind(kind: str, name: str) -> str:
    """ACP's ``ToolKind`` for a corral tool of ``kind`` named ``name``."""
    lowered = name.lower()
    for acp, words in _NAMED_KINDS:
        if lowered in words or any(lowered.startswith(w + "_") for w in words):
            return acp
    return _KINDS.get(kind, "other")


def paths_of(tool_input: Any, cwd: str) -> list[str]:
    """The absolute paths a tool's input names (relative ones taken against ``cwd``)."""
    if not isinstance(tool_input, dict):
        return []
    found = []
    for key in _PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            found.append(os.path.normpath(os.path.join(cwd, value)))
    return found


def title_of(name: str, tool_input: Any) -> str:
    """``name`` and what it works on: ``bash: ls -l``, ``read: src/a.py``."""
    if isinstance(tool_input, dict):
        for key in _SUMMARY_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                line = value.strip().splitlines()[0] if value.strip() else value
                return f"{name}: {line[:120]}"
    return name


class Updates:
    """Maps one session's events onto ACP updates; keeps what a later event needs (the tool
    calls under way, the text just streamed, the commands and context window last known)."""

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self._tools: dict[str, Tool] = {}
        self._streamed: dict[str, str] = {"assistant": "", "thought": ""}
        self._commands: list[str] | None = None
        self._window = 0

    def updates(self, event: Event) -> list[Update]:
        """The updates for one event (often none)."""
        if not isinstance(event, (Assistant, Thought)):
            self._streamed = {"assistant": "", "thought": ""}
        match event:
            case Assistant(text=text, delta=delta):
                return self._text("assistant", "agent_message_chunk", text, delta)
            case Thought(text=text, delta=delta):
                return self._text("thought", "agent_thought_chunk", text, delta)
            case User(text=text):
                return [Update(session_update="user_message_chunk", content=TextBlock(text=text))]
            case Tool():
                return self._tool(event)
            case Result():
                return [self._usage(event)]
            case Init(tools=tools):
                return self._commands_update([t for t in tools if t.startswith("/")])
            case PermissionsChanged(mode=mode):
                return [Update(session_update="current_mode_update", current_mode_id=mode)]
            case Compaction(context_tokens=tokens) if tokens:
                self._window = tokens
        return []

    # --- text -------------------------------------------------------------------------------

    def _text(self, kind: str, update: str, text: str, delta: bool) -> list[Update]:
        if delta:
            self._streamed[kind] += text
        elif self._streamed[kind] == text:
            self._streamed[kind] = ""
            return []  # the consolidated copy of what was just streamed
        else:
            self._streamed[kind] = ""
        if not text:
            return []
        return [Update(session_update=update, content=TextBlock(text=text))]

    # --- tools ------------------------------------------------------------------------------

    def _tool(self, tool: Tool) -> list[Update]:
        plan = _PLAN_TOOLS.get(tool.name)
        if plan is not None and isinstance(tool.input, dict) and isinstance(tool.input.get(plan), list):
            return [Update(session_update="plan", entries=_plan_entries(tool.input[plan]))]
        if plan is not None:
            return []  # a plan tool's end carries nothing new
        started = self._tools.get(tool.call_id)
        if tool.phase == "started" or started is None:
            self._tools[tool.call_id] = tool
            paths = paths_of(tool.input, self.cwd)
            first = Update(session_update="tool_call", tool_call_id=tool.call_id,
                           title=title_of(tool.name, tool.input), kind=acp_kind(tool.kind, tool.name),
                           status="in_progress", raw_input=tool.input,
                           locations=[Location(path=p) for p in paths] or None)
            if tool.phase == "started":
                return [first]
            started = tool
            out = [first]
        else:
            out = []
        tool_input = tool.input if tool.input is not None else started.input
        if tool.phase == "updated":
            content: list[Content | Diff] = _output(tool.output)
            out.append(Update(session_update="tool_call_update", tool_call_id=tool.call_id,
                              status="in_progress", content=content or None,
                              raw_input=tool.input if tool.input != started.input else None))
            return out
        del self._tools[tool.call_id]
        content = _output(tool.output)
        if not tool.is_error and started.kind == "edit":
            content += _diffs(tool_input, self.cwd)
        out.append(Update(session_update="tool_call_update", tool_call_id=tool.call_id,
                          status="failed" if tool.is_error else "completed",
                          content=content or None, raw_output=tool.output))
        return out

    # --- usage, commands --------------------------------------------------------------------

    def _usage(self, result: Result) -> Update:
        usage = result.usage
        used = (usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
                + usage.output_tokens)
        cost = Cost(amount=result.cost_usd, currency="USD") if result.cost_usd is not None else None
        return Update(session_update="usage_update", used=used, size=self._window, cost=cost,
                      meta={"corral": {"usage": {
                          "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                          "cache_read_tokens": usage.cache_read_tokens,
                          "cache_write_tokens": usage.cache_write_tokens}}})

    def _commands_update(self, commands: list[str]) -> list[Update]:
        if not commands or commands == self._commands:
            return []
        self._commands = commands
        listed = [AvailableCommand(name=c[1:], description=c) for c in commands]
        return [Update(session_update="available_commands_update", available_commands=listed)]


def _output(output: Any) -> list[Content | Diff]:
    if output is None or output == "":
        return []
    if isinstance(output, str):
        text = output
    else:
        text = json.dumps(output, ensure_ascii=False, indent=1)
    return [Content(content=TextBlock(text=text))]


def _diffs(tool_input: Any, cwd: str) -> list[Content | Diff]:
    """``diff`` contents for an edit's input: ``{path, old, new}`` or a list of ``edits``."""
    if not isinstance(tool_input, dict):
        return []
    paths = paths_of(tool_input, cwd)
    if not paths:
        return []
    edits = tool_input.get("edits")
    changes: list[Any] = edits if isinstance(edits, list) else [tool_input]
    out: list[Content | Diff] = []
    for change in changes:
        if not isinstance(change, dict):
            continue
        old = next((change[k] for k in _OLD_KEYS if isinstance(change.get(k), str)), None)
        new = next((change[k] for k in _NEW_KEYS if isinstance(change.get(k), str)), None)
        if new is not None:
            out.append(Diff(path=paths[0], old_text=old, new_text=new))
    return out


def _plan_entries(items: list[Any]) -> list[PlanEntry]:
    entries = []
    for item in items:
        if isinstance(item, str):
            entries.append(PlanEntry(content=item, priority="medium", status="pending"))
            continue
        if not isinstance(item, dict):
            continue
        text = next((item[k] for k in ("content", "step", "description", "title")
                     if isinstance(item.get(k), str)), "")
        status = _PLAN_STATUS.get(str(item.get("status", "")).lower(), "pending")
        priority = item.get("priority") if item.get("priority") in ("high", "medium", "low") else "medium"
        entries.append(PlanEntry(content=text, status=status, priority=priority))  # type: ignore[arg-type]
    return entries
