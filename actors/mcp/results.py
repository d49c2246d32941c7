"""What the MCP actors hand out: tool descriptions and bounded call results, as msgspec data.

The SDK speaks pydantic; everything that leaves ``actors.mcp`` (to the native worker in one
frame, to the shared endpoint, to clients) is converted here to plain Structs, and a tool
result is clipped to a byte budget so that one chatty server cannot blow up a session's log,
the worker's frame or the model's context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import Struct

if TYPE_CHECKING:  # the SDK's types load with the actor, not with the config
    import mcp_types

__all__ = ["CallOutcome", "ToolInfo", "bound_result", "full_name", "split_name", "tool_info"]

_PREFIX = "mcp__"
_SEP = "__"


class ToolInfo(Struct, frozen=True, kw_only=True):
    """One tool as a session sees it: ``name`` is ``mcp__SERVER__TOOL``, ``tool`` the bare name."""

    name: str
    server: str
    tool: str
    description: str | None = None
    title: str | None = None
    input_schema: dict[str, Any] = msgspec.field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None


class CallOutcome(Struct, frozen=True, kw_only=True):
    """A tool call's result: MCP content blocks as JSON objects, ``is_error`` as the server set it.

    ``truncated`` says the content was clipped to the daemon's ``max_result_bytes``;
    ``error_code`` is set when the daemon, not the server, made this an error (``mcp.*``).
    """

    content: list[dict[str, Any]]
    structured: dict[str, Any] | None = None
    is_error: bool = False
    truncated: bool = False
    error_code: str | None = None

    def text(self) -> str:
        """The text blocks joined by newlines (what a plain-text consumer shows)."""
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")


def full_name(server: str, tool: str) -> str:
    """``mcp__SERVER__TOOL``, the name vendor CLIs and native sessions give an MCP tool."""
    return f"{_PREFIX}{server}{_SEP}{tool}"


def split_name(name: str) -> tuple[str, str] | None:
    """``(server, tool)`` of a full name, or ``None`` if ``name`` is not one (server names have no ``__``)."""
    if not name.startswith(_PREFIX):
        return None
    server, sep, tool = name[len(_PREFIX):].partition(_SEP)
    return (server, tool) if sep and server and tool else None


def tool_info(server: str, tool: mcp_types.Tool) -> ToolInfo:
    """The ``ToolInfo`` of one SDK ``Tool`` listed by ``server``."""
    dumped = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    return ToolInfo(
        name=full_name(server, tool.name), server=server, tool=tool.name,
        description=tool.description, title=tool.title,
        input_schema=dumped.get("inputSchema") or {"type": "object"},
        output_schema=dumped.get("outputSchema"), annotations=dumped.get("annotations"),
    )


def bound_result(result: mcp_types.CallToolResult, limit: int) -> CallOutcome:
    """``result`` as a ``CallOutcome`` of at most about ``limit`` bytes of JSON.

    Blocks are kept in order while they fit; a text block that does not fit is cut to the room
    left; any other block that does not fit (an image, a resource) is dropped; a note block says
    how much was left out. Structured content is kept only if it fits whole.
    """
    blocks = [b.model_dump(by_alias=True, mode="json", exclude_none=True) for b in result.content]
    structured = result.structured_content
    total = sum(_size(b) for b in blocks) + (_size(structured) if structured is not None else 0)
    if total <= limit:
        return CallOutcome(content=blocks, structured=structured, is_error=result.is_error)
    room = limit
    kept: list[dict[str, Any]] = []
    for block in blocks:
        size = _size(block)
        if size <= room:
            kept.append(block)
            room -= size
        elif block.get("type") == "text" and room > 64:
            text = str(block.get("text", "")).encode()[: room - 64].decode(errors="ignore")
            kept.append({**block, "text": text})
            room = 0
    if structured is not None and _size(structured) > room:
        structured = None
    kept.append({"type": "text", "text": f"[result clipped: {total} bytes, limit {limit}]"})
    return CallOutcome(content=kept, structured=structured, is_error=result.is_error, truncated=True)


def _size(value: object) -> int:
    return len(msgspec.json.encode(value))
