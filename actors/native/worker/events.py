"""ADK events → corral's normalized events, for one turn (``EventMapper``).

=====================================================  ==========================================
ADK event                                              corral events
=====================================================  ==========================================
partial, text / thought parts                          ``assistant`` / ``thought`` deltas
final model response, text not streamed before         ``assistant`` / ``thought`` whole
final model response, function calls                   ``tool {started}`` per call
``adk_request_confirmation`` call (a tool asks)        ``permission`` (id: the confirmation call's)
function responses (not placeholders of a pause)       ``tool {completed}``, ``is_error`` from
                                                       an ``error`` key
user-authored events (prompts, confirmations, steers)  nothing (the daemon reports prompts)
=====================================================  ==========================================

A tool's ``kind`` comes from the coding tools' table; ``mcp__SERVER__TOOL`` names are ``mcp``.

A response that asks for confirmation carries a placeholder result for that call (listed in
``actions.requested_tool_confirmations``); it is not the call's completion, which comes when the
invocation is resumed, when an abort seals the call (ADK answers it and the confirmation call
with an error), or, if the turn ends while paused, from ``unanswered``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.adk.events.event import Event as AdkEvent
from google.genai import types

from actors.native.worker.askrules import MCP_PREFIX
from protocol.events import Assistant, Event, Permission, Thought, Tool, ToolKind

__all__ = ["CONFIRMATION", "EventMapper", "Pending"]

CONFIRMATION = "adk_request_confirmation"
"""The function call ADK emits when a tool asks for confirmation."""


class Pending:
    """A tool call waiting for the user's decision."""

    def __init__(self, call_id: str, tool: str, args: dict[str, Any]) -> None:
        self.call_id = call_id
        self.tool = tool
        self.args = args


class EventMapper:
    """Translates one turn's ADK events; ``waiting`` holds the permission requests it saw."""

    def __init__(self, kinds: Mapping[str, ToolKind]) -> None:
        self._kinds = kinds
        self._streamed = {"text": False, "thought": False}
        self._inputs: dict[str, dict[str, Any]] = {}
        self.waiting: dict[str, Pending] = {}
        """Open permission requests: confirmation call id → the call waiting for it."""

    def map(self, event: AdkEvent) -> list[Event]:
        """The corral events for one ADK event."""
        if event.author == "user" or event.content is None or not event.content.parts:
            return []
        parts = event.content.parts
        if event.partial:
            return self._deltas(parts)
        out = self._whole_text(parts)
        placeholders = event.actions.requested_tool_confirmations if event.actions else {}
        for part in parts:
            if part.function_call is not None:
                out.extend(self._call(part.function_call))
            elif part.function_response is not None:
                response = part.function_response
                if response.name == CONFIRMATION:
                    self.waiting.pop(response.id or "", None)  # sealed by an abort
                elif response.id not in placeholders:
                    out.append(self._completed(response))
        return out

    def unanswered(self, output: str) -> list[Tool]:
        """``tool {completed, is_error}`` for every call still waiting, which are then dropped
        (the turn ends without their answer)."""
        out = [Tool(call_id=p.call_id, name=p.tool, kind=self._kind(p.tool), phase="completed",
                    input=p.args, output=output, is_error=True) for p in self.waiting.values()]
        self.waiting.clear()
        return out

    def _deltas(self, parts: list[types.Part]) -> list[Event]:
        out: list[Event] = []
        for part in parts:
            if not part.text:
                continue
            if part.thought:
                self._streamed["thought"] = True
                out.append(Thought(text=part.text, delta=True))
            else:
                self._streamed["text"] = True
                out.append(Assistant(text=part.text, delta=True))
        return out

    def _whole_text(self, parts: list[types.Part]) -> list[Event]:
        """Text of a final response that was not streamed (then the stream flags reset)."""
        out: list[Event] = []
        if not self._streamed["thought"]:
            thought = "".join(p.text or "" for p in parts if p.thought)
            if thought:
                out.append(Thought(text=thought, delta=False))
        if not self._streamed["text"]:
            text = "".join(p.text or "" for p in parts if p.text and not p.thought)
            if text:
                out.append(Assistant(text=text, delta=False))
        self._streamed = {"text": False, "thought": False}
        return out

    def _call(self, call: types.FunctionCall) -> list[Event]:
        args = dict(call.args or {})
        if call.name != CONFIRMATION:
            name = call.name or ""
            self._inputs[call.id or ""] = args
            return [Tool(call_id=call.id or "", name=name, kind=self._kind(name),
                         phase="started", input=args)]
        original = args.get("originalFunctionCall") or {}
        tool = str(original.get("name") or "")
        arguments = dict(original.get("args") or {})
        self.waiting[call.id or ""] = Pending(str(original.get("id") or ""), tool, arguments)
        return [Permission(permission_id=call.id or "", tool=tool, kind=self._kind(tool),
                           input=arguments, options=["allow", "deny", "allow_always"])]

    def _completed(self, response: types.FunctionResponse) -> Tool:
        name = response.name or ""
        for permission_id, pending in list(self.waiting.items()):
            if pending.call_id == response.id:
                del self.waiting[permission_id]  # answered without a decision (an abort)
        body = response.response or {}
        is_error = "error" in body
        output = body.get("error" if is_error else "output", body)
        return Tool(call_id=response.id or "", name=name, kind=self._kind(name),
                    phase="completed", input=self._inputs.pop(response.id or "", None), output=output if isinstance(output, str) else str(output),
                    is_error=is_error)

    def _kind(self, name: str) -> ToolKind:
        if name.startswith(MCP_PREFIX):
            return "mcp"
        return self._kinds.get(name, "other")
