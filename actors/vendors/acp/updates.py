"""``session/update`` notifications as corral events (pure; state kept per agent child).

=============================  ==============================================================
ACP update                     corral event
=============================  ==============================================================
``agent_message_chunk``        ``assistant`` (text, ``delta: true``); other content skipped
``agent_thought_chunk``        ``thought`` (text, ``delta: true``)
``user_message_chunk``         nothing (the session reports each prompt as ``user``)
``tool_call``                  ``tool`` ``started`` (a repeat of a known id: ``updated``)
``tool_call_update``           ``tool`` ``updated``, or ``completed`` on ``completed``/``failed``
                               (``is_error`` when failed); an id never announced starts first
``plan``                       ``tool`` named ``plan`` (one call per turn: ``started``, then
                               ``updated`` with every revision, ``completed`` at the turn's
                               end), ``input: {"entries": [...]}``: a plan is the agent's todo
                               list, shown as Claude Code's ``TodoWrite`` is
``current_mode_update``        ``tool`` ``switch_mode`` (ACP's own kind for it), started and
                               completed at once, ``input: {"mode": id}``
``config_option_update``       as ``current_mode_update`` for a mode option; ``init`` with the
                               new ``model`` for a model option
``available_commands_update``  ``init`` whose ``tools`` are the commands (``/name``)
``usage_update``               ``limits`` with one window ``context`` (``used_percent`` of
                               the context window)
``session_info_update``        nothing (a title)
=============================  ==============================================================

Tool names: the agent's own where it says it (``_meta.claudeCode.toolName``; with the
``tool_name_in_id`` quirk the part of ``toolCallId`` before ``__``), else ACP's ``kind``.
``input`` is the raw input, or the title and paths when the agent sends none; ``output`` the
raw output, else the text of the content (diffs as ``{path, new_text}``, terminals by id). A
permission request's tool call adds its raw input to what is known of the call (the request may
come before the update that fills the input in).
"""

from __future__ import annotations

from typing import Any

import msgspec

from protocol.events import (
    Assistant, Event, Init, LimitWindow, Limits, Thought, Tool, ToolKind, ToolPhase, Usage,
)

from .wire import PromptResult, PromptUsage, ToolCall, Update

__all__ = ["Updates", "tool_kind", "turn_usage"]

_KINDS: dict[str, ToolKind] = {
    "read": "read", "edit": "edit", "delete": "edit", "move": "edit", "search": "search",
    "execute": "exec", "fetch": "other", "think": "other", "switch_mode": "other",
    "other": "other",
}


def tool_kind(kind: str | None, name: str = "") -> ToolKind:
    """corral's coarse kind for an ACP ``ToolKind`` (an ``mcp__`` name outside ACP's fs is mcp)."""
    if name.startswith("mcp__") and not name.startswith("mcp__acp__"):
        return "mcp"
    return _KINDS.get(kind or "other", "other")


class _Call(msgspec.Struct):
    name: str
    kind: ToolKind
    input: Any
    paths: list[str]


class Updates:
    """Maps one agent child's updates; ``init`` is the event the session opened with."""

    def __init__(self, *, name_in_id: bool = False) -> None:
        self.init: Init | None = None
        self.mode: str | None = None
        self._name_in_id = name_in_id
        self._calls: dict[str, _Call] = {}
        self._plan: str | None = None
        self._turns = 0
        self._modes = 0
        self._commands: list[str] = []

    def update(self, update: Update) -> list[Event]:
        """The events for one update."""
        match update.session_update:
            case "agent_message_chunk" | "agent_thought_chunk":
                text = _text(update.content)
                if not text:
                    return []
                if update.session_update == "agent_message_chunk":
                    return [Assistant(text=text, delta=True)]
                return [Thought(text=text, delta=True)]
            case "tool_call" | "tool_call_update":
                return self.tool(update.tool_call())
            case "plan":
                return self._plan_event(update.entries or [])
            case "current_mode_update":
                return self._mode_event(update.current_mode_id)
            case "config_option_update":
                return self._config(update)
            case "available_commands_update":
                names = [f"/{c['name']}" for c in update.available_commands or []
                         if isinstance(c, dict) and isinstance(c.get("name"), str)]
                if names == self._commands or self.init is None:
                    self._commands = names
                    return []
                self._commands = names
                self.init = msgspec.structs.replace(self.init, tools=names)
                return [self.init]
            case "usage_update" if update.used is not None and update.size:
                percent = round(100.0 * update.used / update.size, 1)
                return [Limits(windows=[LimitWindow(name="context", used_percent=percent)])]
        return []

    def tool(self, call: ToolCall, *, announce_only: bool = False) -> list[Event]:
        """Events for a sighting of ``call``; ``announce_only`` (a permission's tool call) only
        starts a call not seen before."""
        known = self._calls.get(call.tool_call_id)
        out: list[Event] = []
        if known is None:
            name = self._name(call)
            known = _Call(name=name, kind=tool_kind(call.kind, name), input=_input(call),
                          paths=paths_of(call))
            self._calls[call.tool_call_id] = known
            out.append(Tool(call_id=call.tool_call_id, name=known.name, kind=known.kind,
                            phase="started", input=known.input))
            if announce_only or call.status not in ("completed", "failed"):
                return out
        elif announce_only:
            known.input = _merged(known.input, call.raw_input)
            known.paths = sorted({*known.paths, *paths_of(call)})
            return out
        if call.raw_input not in (None, {}):
            known.input = call.raw_input
        known.paths = sorted({*known.paths, *paths_of(call)})
        done = call.status in ("completed", "failed")
        if done:
            del self._calls[call.tool_call_id]
        output = call.raw_output if call.raw_output is not None else _content(call.content)
        if not done and output is None and call.raw_input in (None, {}) and not call.title:
            return out
        out.append(Tool(call_id=call.tool_call_id, name=known.name, kind=known.kind,
                        phase="completed" if done else "updated",
                        input=known.input, output=output, is_error=call.status == "failed"))
        return out

    def paths(self, tool_call_id: str) -> list[str]:
        """The paths a known tool call touches (from its locations, diffs and raw input)."""
        known = self._calls.get(tool_call_id)
        return list(known.paths) if known is not None else []

    def kind(self, tool_call_id: str) -> ToolKind | None:
        """The coarse kind of a known tool call."""
        known = self._calls.get(tool_call_id)
        return known.kind if known is not None else None

    def name_of(self, tool_call_id: str) -> str | None:
        """The name of a known tool call."""
        known = self._calls.get(tool_call_id)
        return known.name if known is not None else None

    def input_of(self, tool_call_id: str) -> Any:
        """The input of a known tool call (raw input, else title and paths)."""
        known = self._calls.get(tool_call_id)
        return known.input if known is not None else None

    def turn_ended(self) -> list[Event]:
        """Close the turn's plan (a new turn starts a new plan call)."""
        self._turns += 1
        if self._plan is None:
            return []
        plan, self._plan = self._plan, None
        return [Tool(call_id=plan, name="plan", kind="other", phase="completed")]

    def _plan_event(self, entries: list[dict[str, Any]]) -> list[Event]:
        phase: ToolPhase = "updated" if self._plan is not None else "started"
        self._plan = self._plan or f"plan-{self._turns + 1}"
        return [Tool(call_id=self._plan, name="plan", kind="other", phase=phase,
                     input={"entries": entries})]

    def _mode_event(self, mode: str | None) -> list[Event]:
        if mode is None or mode == self.mode:
            return []
        self.mode = mode
        self._modes += 1
        call_id = f"mode-{self._modes}"
        return [Tool(call_id=call_id, name="switch_mode", kind="other", phase="started",
                     input={"mode": mode}),
                Tool(call_id=call_id, name="switch_mode", kind="other", phase="completed",
                     input={"mode": mode})]

    def _config(self, update: Update) -> list[Event]:
        out: list[Event] = []
        for option in update.config_options or []:
            value = option.current_value
            if option.category == "mode" and isinstance(value, str):
                out += self._mode_event(value)
            elif (option.category == "model" and isinstance(value, str)
                  and self.init is not None and value != self.init.model):
                self.init = msgspec.structs.replace(self.init, model=value)
                out.append(self.init)
        return out

    def _name(self, call: ToolCall) -> str:
        meta = (call.meta or {}).get("claudeCode")
        if isinstance(meta, dict) and isinstance(meta.get("toolName"), str):
            return str(meta["toolName"])
        if self._name_in_id and "__" in call.tool_call_id:
            return call.tool_call_id.split("__", 1)[0]
        return call.kind or "tool"


def paths_of(call: ToolCall) -> list[str]:
    """Every path a tool call names: locations, diff paths, and path-like raw input fields."""
    found = {loc.path for loc in call.locations or []}
    for item in call.content or []:
        if item.get("type") == "diff" and isinstance(item.get("path"), str):
            found.add(item["path"])
    if isinstance(call.raw_input, dict):
        for key in ("file_path", "path", "fileName", "filePath", "absolute_path"):
            value = call.raw_input.get(key)
            if isinstance(value, str):
                found.add(value)
    return sorted(found)


def _text(content: Any) -> str:
    if isinstance(content, dict) and content.get("type") == "text":
        text = content.get("text")
        return text if isinstance(text, str) else ""
    return ""


def _merged(known: Any, raw: Any) -> Any:
    """``known`` input with a later sighting's raw input over it: a permission request may carry
    what an earlier partial announcement lacked (OpenCode sends a bash call's cwd first)."""
    if raw in (None, {}):
        return known
    if isinstance(known, dict) and isinstance(raw, dict):
        return {**known, **raw}
    return raw


def _input(call: ToolCall) -> Any:
    if call.raw_input not in (None, {}):
        return call.raw_input
    described: dict[str, Any] = {}
    if call.title:
        described["title"] = call.title
    paths = paths_of(call)
    if paths:
        described["paths"] = paths
    return described or None


def _content(content: list[dict[str, Any]] | None) -> Any:
    if not content:
        return None
    texts: list[str] = []
    other: list[dict[str, Any]] = []
    for item in content:
        match item.get("type"):
            case "content":
                texts.append(_text(item.get("content")))
            case "diff":
                other.append({"path": item.get("path"), "new_text": item.get("newText")})
            case "terminal":
                other.append({"terminal_id": item.get("terminalId")})
    text = "".join(texts)
    if not other:
        return text or None
    return [*([{"text": text}] if text else []), *other]


def turn_usage(done: PromptResult, seen: PromptUsage, *,
               cumulative: bool) -> tuple[Usage, PromptUsage]:
    """A turn's usage from its prompt answer, and the figure to remember for the next turn.

    ``usage`` (unstable ACP) counts the turn, or the whole session when ``cumulative`` (then
    the turn's share is the growth over ``seen``); else Gemini's ``_meta.quota.token_count``.
    """
    if done.usage is not None:
        now = done.usage
        base = seen if cumulative else PromptUsage()
        return Usage(input_tokens=max(now.input_tokens - base.input_tokens, 0),
                     output_tokens=max(now.output_tokens - base.output_tokens, 0),
                     cache_read_tokens=max(now.cached_read_tokens - base.cached_read_tokens, 0),
                     cache_write_tokens=max(now.cached_write_tokens - base.cached_write_tokens,
                                            0)), now
    quota = (done.meta or {}).get("quota")
    counts = quota.get("token_count") if isinstance(quota, dict) else None
    if isinstance(counts, dict):
        return Usage(input_tokens=int(counts.get("input_tokens") or 0),
                     output_tokens=int(counts.get("output_tokens") or 0)), seen
    return Usage(), seen
