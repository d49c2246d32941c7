"""A server's cached lists (tools, resources, prompts) and how they follow the server's changes.

The lists are read whole when a connection starts and again when the server says one changed:
``notifications/{tools,resources,prompts}/list_changed`` on a 2025-11-25 session, or the events
of a ``subscriptions/listen`` stream on a 2026-07-28 one (the SDK tees those events to the
message handler too, so one handler marks the list dirty in both eras). A refresher task reads
the dirty lists again, coalescing changes that arrive while it reads; a refresh replaces a list
whole. ``changed`` is set after each refresh (the actor's waiters use it). ``settled`` waits
while a change is announced but not yet read, so that a listing right after a ``list_changed``
(the native agent's next model request) sees the new list rather than the old one.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

import trio

if TYPE_CHECKING:  # the SDK loads with a server's first connection (actors.mcp.actor)
    import mcp_types

    from actors.mcp.connection import Connection

__all__ = ["Lists"]

log = logging.getLogger("corral.mcp")

Kind = Literal["tools", "resources", "prompts"]
_ALL: tuple[Kind, ...] = ("tools", "resources", "prompts")
_PAGE_CAP = 100  # pages of a list walk: a server whose cursor never ends cannot hang a refresh
_RELISTEN = 10  # times a lost subscriptions/listen stream is opened again on one connection


class Lists:
    """The last lists a server gave, kept across its restarts (its tools stay listed)."""

    def __init__(self, name: str, on_change: Callable[[], None]) -> None:
        self.name = name
        self.tools: list[mcp_types.Tool] = []
        self.resources: list[mcp_types.Resource] = []
        self.prompts: list[mcp_types.Prompt] = []
        self._on_change = on_change
        self._dirty: set[Kind] = set()
        self._dirty_event = trio.Event()
        self._quiet = trio.Event()  # set while no announced change waits to be read
        self._quiet.set()

    async def settled(self) -> None:
        """Return once every announced change has been read (at once when none is pending).
        The caller bounds the wait; a connection lost meanwhile counts as settled."""
        await self._quiet.wait()

    async def on_message(self, message: Any) -> None:
        """The SDK's message handler: a change notification marks its list dirty."""
        import mcp_types  # loaded with the connection that calls this

        match message:
            case mcp_types.ToolListChangedNotification():
                self._mark("tools")
            case mcp_types.ResourceListChangedNotification():
                self._mark("resources")
            case mcp_types.PromptListChangedNotification():
                self._mark("prompts")
            case Exception():
                log.debug("MCP server %s: transport reported %r", self.name, message)

    async def refresh(self, live: Connection, kinds: tuple[Kind, ...] = _ALL) -> None:
        """Read ``kinds`` again (those the server has the capability for)."""
        caps = live.client.server_capabilities
        client = live.client
        if "tools" in kinds and caps.tools is not None:
            self.tools = await _walk(lambda cursor: client.list_tools(cursor=cursor), "tools")
        if "resources" in kinds and caps.resources is not None:
            self.resources = await _walk(lambda cursor: client.list_resources(cursor=cursor), "resources")
        if "prompts" in kinds and caps.prompts is not None:
            self.prompts = await _walk(lambda cursor: client.list_prompts(cursor=cursor), "prompts")
        self._on_change()

    async def refresher(self, live: Connection) -> None:
        """Refresh dirty lists until cancelled; a failed refresh is logged (the next change retries)."""
        from mcp.shared.exceptions import MCPError  # loaded with the connection
        from pydantic import ValidationError

        try:
            while True:
                await self._dirty_event.wait()
                self._dirty_event = trio.Event()
                kinds, self._dirty = tuple(self._dirty), set()
                try:
                    await self.refresh(live, kinds)
                except (MCPError, ValidationError, OSError) as exc:
                    if not live.lost.is_set():
                        log.warning("MCP server %s: refreshing %s failed: %s", self.name, sorted(kinds), exc)
                if not self._dirty:
                    self._quiet.set()
        finally:  # the connection ended: the next one reads every list whole
            self._dirty.clear()
            self._quiet.set()

    async def listen(self, live: Connection, *,
                     task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep a 2026-07-28 ``subscriptions/listen`` stream open: ready once the server
        acknowledged it (or refused it), so the first listing cannot miss a change; a stream lost
        is opened again and everything read again (there is no replay)."""
        import mcp_types  # loaded with the connection
        from mcp.client.subscriptions import SubscriptionLost
        from mcp.shared.exceptions import MCPError

        try:
            for attempt in range(_RELISTEN):
                try:
                    async with live.client.listen(tools_list_changed=True, prompts_list_changed=True,
                                                  resources_list_changed=True) as subscription:
                        if attempt == 0:
                            task_status.started()
                        else:
                            for kind in _ALL:
                                self._mark(kind)
                        async for _event in subscription:
                            pass  # the session tees every event to on_message, which marks it
                    return
                except SubscriptionLost:
                    continue
                except (MCPError, RuntimeError) as exc:
                    closed = isinstance(exc, MCPError) and exc.error.code == mcp_types.CONNECTION_CLOSED
                    if not live.lost.is_set() and not closed:
                        log.info("MCP server %s offers no subscriptions/listen: %s", self.name, exc)
                    return
        finally:
            with contextlib.suppress(RuntimeError):
                task_status.started()  # refused or lost before the acknowledgment: not a start failure

    def _mark(self, kind: Kind) -> None:
        self._dirty.add(kind)
        self._dirty_event.set()
        if self._quiet.is_set():
            self._quiet = trio.Event()


async def _walk(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_PAGE_CAP):
        page = await fetch(cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if cursor is None:
            break
    return items
