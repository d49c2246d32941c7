"""The ``mcp`` SDK's low-level ``Server`` over ``tools.Tools``: the stdio server, and the one the
daemon serves at ``/mcp`` (``http``).

Every tool answers one JSON object, as ``structuredContent`` and as its text; a call that could
not be done (an unknown session, bad arguments, the daemon down) is a result with ``isError``
whose text starts with the daemon's stable code (``unknown_session: …``). A permission request
that stops a ``corral_prompt`` is asked of the calling client's user through
``elicitation/create`` when the client declared that capability (``_Caller.ask``); progress
notifications go out when the call carried a progress token.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types
import msgspec
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from protocol.errors import CorralError
from protocol.events import Decision, Permission

from supervisor import __version__
from supervisor.mcpserver.tools import TOOLS, AskLater, Connect, InputRequired, Resume, Tools

__all__ = ["build_server", "error_result", "json_result", "serve_stdio"]

log = logging.getLogger("corral.mcpserver")

_DECISIONS: tuple[Decision, ...] = ("allow", "deny", "allow_always")
_ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"decision": {"type": "string", "enum": list(_DECISIONS), "title": "Decision",
                                "description": "allow once, deny, or allow from now on"}},
    "required": ["decision"],
}
_ELICITATION = types.ClientCapabilities(elicitation=types.ElicitationCapability())


def build_server(connect: Connect) -> Server[Any]:
    """A server whose tools reach the daemon through ``connect``."""
    tools = Tools(connect)
    listed = types.ListToolsResult(tools=[
        types.Tool(name=spec.name, description=spec.description, input_schema=spec.input_schema())
        for spec in TOOLS])

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return listed

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                        ) -> types.CallToolResult | types.InputRequiredResult:
        try:
            answer = await tools.call(params.name, dict(params.arguments or {}), _Caller(ctx),
                                      _resume(params))
        except CorralError as exc:
            return error_result(exc)
        except InputRequired as needed:
            return _input_required(needed)
        return json_result(answer)

    return Server("corral", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool,
                  instructions="corral runs coding-agent sessions (Claude Code, Codex, native, …) "
                               "under a local daemon: create one, prompt it and read its answer.")


def json_result(answer: dict[str, Any]) -> types.CallToolResult:
    """One JSON object as ``structuredContent`` and as the text."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(answer))],
                                structured_content=answer)


def error_result(exc: CorralError) -> types.CallToolResult:
    """A call that could not be done: ``isError``, the text led by the stable code."""
    error = {"code": exc.code.value, "message": exc.message}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{exc.code.value}: {exc.message}")],
        structured_content={"error": error}, is_error=True)


class _Caller:
    """The MCP client of one call (``tools.Caller``)."""

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        self.ctx = ctx
        params = ctx.session.client_params
        info = params.client_info if params is not None else None
        self.name = info.name if info is not None and info.name else "client"

    async def progress(self, done: float, message: str) -> None:
        await self.ctx.session.report_progress(done, None, message)

    async def ask(self, permission: Permission, session_id: str) -> Decision | None:
        session = self.ctx.session
        if not session.check_client_capability(_ELICITATION):
            return None
        if not session.can_send_request:  # 2026-07-28: ask between rounds (``input_required``)
            raise AskLater()
        try:
            result = await session.elicit_form(_question(permission, session_id), _ASK_SCHEMA,
                                               related_request_id=self.ctx.request_id)
        except MCPError as exc:
            log.info("elicitation failed (%s): the permission waits for a client", exc)
            return None
        return _decision(result)


def _question(permission: Permission, session_id: str) -> str:
    return (f"corral session {session_id} asks to use {permission.tool}: "
            f"{json.dumps(permission.input)[:2000]}")


def _decision(result: types.ElicitResult) -> Decision | None:
    """The user's answer: accept with a decision, decline (deny), or cancel (``None``)."""
    if result.action == "decline":
        return "deny"
    decision = (result.content or {}).get("decision") if result.action == "accept" else None
    return decision if decision in _DECISIONS else None


_ASK_KEY = "permission"


def _input_required(needed: InputRequired) -> types.InputRequiredResult:
    """Ask the user between rounds; the state says where the turn starts and what is asked.

    The client echoes the state back unchanged, or not: a forged one can only name another seq
    or request of a session this client may drive anyway, so it is not sealed.
    """
    request = types.ElicitRequest(params=types.ElicitRequestFormParams(
        message=_question(needed.permission, needed.session_id), requested_schema=_ASK_SCHEMA))
    state = Resume(from_seq=needed.from_seq, permission_id=needed.permission.permission_id)
    return types.InputRequiredResult(input_requests={_ASK_KEY: request},
                                     request_state=msgspec.json.encode(state).decode())


def _resume(params: types.CallToolRequestParams) -> Resume | None:
    """The ``Resume`` of a call made again after ``input_required`` (else ``None``)."""
    if not params.request_state:
        return None
    try:
        resume = msgspec.json.decode(params.request_state, type=Resume)
    except msgspec.DecodeError:
        return None
    answer = (params.input_responses or {}).get(_ASK_KEY)
    decision = _decision(answer) if isinstance(answer, types.ElicitResult) else None
    return msgspec.structs.replace(resume, decision=decision)


async def serve_stdio(connect: Connect) -> None:
    """Serve the tools on this process's stdin and stdout until stdin closes.

    While it serves, file descriptor 1 points at stderr (the SDK's ``stdio_server`` does it), so
    nothing but the protocol reaches stdout.
    """
    server = build_server(connect)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
