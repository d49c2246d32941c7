"""``DaemonServices``: a native worker's asks answered by the daemon's MCP and LSP actors.

* ``mcp.list_tools``: the tools of the session's servers (the config's ``[mcp.servers.*]``
  plus the session's own ``mcp_servers``), read from the shared actors at each ask; the
  session is bound to its servers (``McpRegistry.bind``) at its first ask. Idle servers start;
  a server that cannot start or has ``failed`` keeps its last tools listed.
* ``mcp.call_tool``: ``SessionMcp.call_named``: a failure (``mcp.server_failed``,
  ``mcp.server_crashed``, ``mcp.call_timeout``, an unknown tool, …) is an error result that
  names its code, what the model reads.
* ``lsp.diagnostics``: ``LanguageServers.answer`` for a path inside the session's cwd (one
  outside it gets a report from no server: the worker's tools never leave the cwd either).

``session`` looks a live session's ``HarnessRequest`` up (its cwd and MCP servers); a session
that is not live gets error answers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from actors.harness import HarnessRequest
from actors.lsp import DiagnosticsQuery, LanguageServers
from actors.mcp.results import CallOutcome
from protocol.errors import UnknownSession
from protocol.native import (
    Answer,
    Ask,
    AskDiagnostics,
    CallMcpTool,
    DiagnosticsReport,
    ListMcpTools,
    McpResult,
    McpToolDecl,
    McpTools,
)

if TYPE_CHECKING:  # the MCP SDK loads with the daemon's MCP actors, not with this module
    from actors.mcp.binding import SessionMcp
    from actors.mcp.registry import McpRegistry

__all__ = ["DaemonServices", "result_text"]

SessionLookup = Callable[[str], HarnessRequest | None]


class DaemonServices:
    """See the module docstring."""

    def __init__(self, *, mcp: McpRegistry | None, lsp: LanguageServers | None,
                 session: SessionLookup) -> None:
        self._mcp = mcp
        self._lsp = lsp
        self._session = session
        self._binding = trio.Lock()  # one first-time bind at a time

    async def answer(self, session_id: str, ask: Ask) -> Answer:
        """The answer to one ask (see the module docstring); ``UnknownSession`` for a session
        that is not live (the caller makes it an error answer)."""
        request = self._session(session_id)
        if request is None:
            raise UnknownSession(f"session {session_id} is not running")
        match ask:
            case ListMcpTools(id=ask_id):
                binding = await self._bound(session_id, request)
                if binding is None:
                    return McpTools(id=ask_id)
                tools = await binding.tools()
                return McpTools(id=ask_id, tools=[
                    McpToolDecl(name=t.name, description=t.description or t.title or "",
                                input_schema=t.input_schema) for t in tools])
            case CallMcpTool(id=ask_id, name=name, arguments=arguments):
                binding = await self._bound(session_id, request)
                if binding is None:
                    return McpResult(id=ask_id, text="[mcp.unavailable] this daemon runs no MCP servers",
                                     is_error=True, error_code="mcp.unavailable")
                outcome = await binding.call_named(name, arguments)
                return McpResult(id=ask_id, text=result_text(outcome), is_error=outcome.is_error,
                                 error_code=outcome.error_code, truncated=outcome.truncated)
            case AskDiagnostics(id=ask_id, path=path, text=text):
                return await self._diagnostics(ask_id, request.cwd, path, text)
        raise AssertionError(f"not an ask: {ask!r}")  # unreachable: Ask is exactly these three

    async def _bound(self, session_id: str, request: HarnessRequest) -> SessionMcp | None:
        if self._mcp is None:
            return None
        async with self._binding:
            binding = self._mcp.binding(session_id)
            if binding is None:
                binding = await self._mcp.bind(session_id, request.mcp_servers)
        return binding

    async def _diagnostics(self, ask_id: int, cwd: str, path: str,
                           text: str | None) -> DiagnosticsReport:
        root = os.path.realpath(cwd)
        full = os.path.realpath(os.path.join(root, path))
        if self._lsp is None or os.path.commonpath([root, full]) != root:
            return DiagnosticsReport(id=ask_id, path=path)
        report = await self._lsp.answer(root, DiagnosticsQuery(path=full, text=text))
        return DiagnosticsReport(
            id=ask_id, path=report.path, text=report.text(),
            lines=[line.render() for line in report.diagnostics],
            servers={status.server: status.state for status in report.servers})


def result_text(outcome: CallOutcome) -> str:
    """What the model reads of a tool result: its text blocks; else its structured content as
    JSON; other blocks (images, resources) are named, not inlined."""
    text = outcome.text()
    if text:
        return text
    if outcome.structured is not None:
        return json.dumps(outcome.structured, ensure_ascii=False)
    kinds = [str(block.get("type", "?")) for block in outcome.content]
    return f"[{', '.join(kinds)} content]" if kinds else ""
