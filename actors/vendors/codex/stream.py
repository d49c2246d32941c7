"""The items of one Codex thread as session events: text streamed as deltas, tools by phase.

Codex reports each item of a turn (a message, reasoning, a command, a file change, an MCP call)
with ``item/started`` and ``item/completed``, and streams its text or output in between as
deltas. ``ItemStream`` keeps what that takes to make events of them:

* text: ``assistant``/``thought`` deltas as they come, then the whole text when the item
  completes, unless it streamed (one event model: text already streamed as deltas is not
  repeated whole, as the Claude translator does);
* tools (``actors.vendors.codex.items``): ``tool`` started, then ``updated`` with each output
  delta or MCP progress message, then completed; the tool items still running are kept by id
  (``running``) for the name and kind of their updates and for the approvals that name them.

The translator decodes the notifications and drops those of other threads; this is the rest.
"""

from __future__ import annotations

from typing import Literal

from actors.harness import Output
from protocol.events import Assistant, Thought, Tool

from . import messages as m
from .items import NOT_TOOLS, tool_event, tool_name

__all__ = ["DeltaKind", "ItemStream"]

DeltaKind = Literal["assistant", "thought", "tool"]
"""What a delta notification streams: message text, reasoning text, or a tool's output."""


class ItemStream:
    """The items of one thread (see the module docstring)."""

    def __init__(self) -> None:
        self.running: dict[str, m.Item] = {}
        """Tool items started and not completed yet, by item id."""
        self._streamed: dict[str, bool] = {}  # message/reasoning items whose text was streamed

    def item(self, item: m.Item, completed: bool) -> list[Output]:
        """``item/started`` (``completed`` false) or ``item/completed`` of ``item``."""
        if item.type in ("agentMessage", "reasoning"):
            if not completed or self._streamed.pop(item.id, False):
                return []
            if item.type == "agentMessage":
                return [Assistant(text=item.text, delta=False)] if item.text else []
            text = "\n\n".join(item.summary) or "\n\n".join(
                part for part in (item.content or []) if isinstance(part, str))
            return [Thought(text=text, delta=False)] if text else []
        if item.type in NOT_TOOLS:
            return []
        if completed:
            self.running.pop(item.id, None)
        else:
            self.running[item.id] = item
        return [tool_event(item, "completed" if completed else "started")]

    def delta(self, item_id: str, delta: str, kind: DeltaKind) -> list[Output]:
        """A piece of text or output streamed by item ``item_id``."""
        if kind == "assistant":
            self._streamed[item_id] = True
            return [Assistant(text=delta, delta=True)]
        if kind == "thought":
            self._streamed[item_id] = True
            return [Thought(text=delta, delta=True)]
        return [self.tool_update(item_id, delta)]

    def tool_update(self, item_id: str, output: str) -> Tool:
        """The ``updated`` phase of tool item ``item_id`` with ``output`` (an item not known
        is taken for a shell command)."""
        item = self.running.get(item_id)
        name, kind = tool_name(item) if item is not None else ("shell", "exec")
        return Tool(call_id=item_id, name=name, kind=kind, phase="updated", output=output)
