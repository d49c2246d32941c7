"""The tools the daemon answers for the worker: the session's MCP tools and ``diagnostics``.

* ``McpToolset`` is an ADK toolset whose ``get_tools`` asks the daemon (``mcp.list_tools``)
  before every model request: ADK resolves an agent's toolsets once per model step, and the
  toolset's per-invocation cache is switched off, so a tool a server adds (``list_changed``)
  is offered from the next model request on, and one it drops is no longer offered. A list
  that cannot be had (the daemon is slow, the worker is stopping) offers no MCP tools for that
  request; the turn goes on.
* ``McpTool`` (``mcp__SERVER__TOOL``) calls through the daemon (``mcp.call_tool``); it asks
  first when the session's ``AskRules`` say so (MCP tools ask in ``ask`` and ``auto_edit``
  unless an ``allow_tools`` pattern matches). A failure of the server is an error result
  whose text starts with its code (``[mcp.server_failed] …``), never an exception.
* ``DiagnosticsTool`` (``diagnostics {path}``) asks for a file's current diagnostics, and
  ``decorate`` appends a ``write``/``edit`` result with the diagnostics of the file it changed.

The daemon bounds every ask it serves (server start-up, ``call_timeout``, the LSP settle
window); the link's own timeouts here are backstops against a daemon that never answers.
"""

from __future__ import annotations

import logging
from typing import Any

from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from actors.native.worker.askrules import AskRules
from protocol.native import (
    AskDiagnostics,
    CallMcpTool,
    DiagnosticsReport,
    ListMcpTools,
    McpResult,
    McpToolDecl,
    McpTools,
)

from .agent import confirm
from .link import DaemonLink, LinkClosed, LinkTimeout

__all__ = ["DIAGNOSTICS", "DiagnosticsTool", "McpTool", "McpToolset", "decorate"]

log = logging.getLogger("corral.native.daemon_tools")

LIST_TIMEOUT = 120.0
"""Backstop for ``mcp.list_tools`` (the daemon bounds each server's start-up itself)."""
CALL_TIMEOUT = 3600.0
"""Backstop for ``mcp.call_tool`` (the daemon bounds calls by the server's ``call_timeout``)."""
DIAGNOSTICS_TIMEOUT = 120.0
"""Backstop for ``lsp.diagnostics`` (the daemon bounds it by start-up plus the settle window)."""

DIAGNOSTICS = "diagnostics"
_DIAGNOSTICS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string", "description": (
        "File to check, relative to the working directory, or absolute inside it.")}},
    "required": ["path"],
}


class McpToolset(BaseToolset):
    """The session's MCP tools, listed afresh for every model request."""

    def __init__(self, link: DaemonLink, ask_rules: AskRules) -> None:
        super().__init__()
        self._use_invocation_cache = False  # a list_changed shows at the next model request
        self._link = link
        self._ask_rules = ask_rules

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """Ask the daemon for the tools; none when it cannot say in time."""
        try:
            answer = await self._link.ask(lambda i: ListMcpTools(id=i), McpTools, LIST_TIMEOUT)
        except (LinkClosed, LinkTimeout) as exc:
            log.warning("no MCP tools for this request: %s", exc)
            return []
        return [McpTool(decl, self._link, self._ask_rules) for decl in answer.tools]


class McpTool(BaseTool):
    """One MCP tool of the session, called through the daemon."""

    def __init__(self, decl: McpToolDecl, link: DaemonLink, ask_rules: AskRules) -> None:
        super().__init__(name=decl.name, description=decl.description or decl.name)
        self._schema = decl.input_schema or {"type": "object", "properties": {}}
        self._link = link
        self._ask_rules = ask_rules

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(name=self.name, description=self.description,
                                         parameters_json_schema=self._schema)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Ask first if the ask rules say so; then one ``mcp.call_tool`` ask."""
        refused = confirm(self._ask_rules, self.name, tool_context)
        if refused is not None:
            return refused
        try:
            result = await self._link.ask(
                lambda i: CallMcpTool(id=i, name=self.name, arguments=dict(args)), McpResult,
                CALL_TIMEOUT)
        except (LinkClosed, LinkTimeout) as exc:
            return {"error": f"[mcp.no_answer] {exc}"}
        return {"error": result.text} if result.is_error else {"output": result.text}


class DiagnosticsTool(BaseTool):
    """``diagnostics {path}``: the file's current errors and warnings from the language servers."""

    def __init__(self, link: DaemonLink) -> None:
        super().__init__(name=DIAGNOSTICS, description=(
            "Show the current errors and warnings of a file, as the language servers (ruff, "
            "pyright, ...) report them: lines path:line:col: severity [source code] message. "
            "write and edit already show the diagnostics of the file they change; use this to "
            "check a file you did not change, or again after a while."))
        self._link = link

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(name=self.name, description=self.description,
                                         parameters_json_schema=_DIAGNOSTICS_SCHEMA)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """One ``lsp.diagnostics`` ask for the file as it is on disk."""
        path = args.get("path")
        if not isinstance(path, str) or not path:
            return {"error": "invalid arguments for diagnostics: path must be a non-empty string"}
        try:
            report = await self._link.ask(lambda i: AskDiagnostics(id=i, path=path),
                                          DiagnosticsReport, DIAGNOSTICS_TIMEOUT)
        except (LinkClosed, LinkTimeout) as exc:
            return {"error": f"no diagnostics: {exc}"}
        if not report.servers:
            return {"output": f"No language server checks {report.path}."}
        if report.text:
            return {"output": report.text}
        return {"output": f"No errors or warnings in {report.path}."}


async def decorate(link: DaemonLink, path: str, text: str | None) -> str:
    """The ``Diagnostics:`` block to append to a ``write``/``edit`` result for ``path`` (``text``:
    what was written, if known), or ``""`` (nothing to say, or no answer)."""
    try:
        report = await link.ask(lambda i: AskDiagnostics(id=i, path=path, text=text),
                                DiagnosticsReport, DIAGNOSTICS_TIMEOUT)
    except (LinkClosed, LinkTimeout) as exc:
        log.warning("no diagnostics for %s: %s", path, exc)
        return ""
    return report.text
