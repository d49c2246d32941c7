"""Tool names and the bound on results."""

from __future__ import annotations

import mcp_types
import msgspec

from actors.mcp.results import bound_result, full_name, split_name, tool_info


def test_full_names_round_trip() -> None:
    assert full_name("fs", "read_file") == "mcp__fs__read_file"
    assert split_name("mcp__fs__read_file") == ("fs", "read_file")
    assert split_name("mcp__fs__a__b") == ("fs", "a__b")
    for bad in ("read", "mcp__fs", "mcp____x", "mcp__fs__"):
        assert split_name(bad) is None


def test_tool_info_keeps_the_schema() -> None:
    tool = mcp_types.Tool(name="echo", description="d", input_schema={"type": "object", "properties": {"a": {}}})
    info = tool_info("fs", tool)
    assert info.name == "mcp__fs__echo" and info.tool == "echo" and info.description == "d"
    assert info.input_schema["properties"] == {"a": {}}


def _result(*blocks: mcp_types.ContentBlock, structured: dict[str, object] | None = None) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=list(blocks), structured_content=structured)


def test_a_small_result_passes_whole() -> None:
    out = bound_result(_result(mcp_types.TextContent(type="text", text="hi"), structured={"r": 1}), 4096)
    assert out.content == [{"type": "text", "text": "hi"}] and out.structured == {"r": 1}
    assert not out.truncated and not out.is_error


def test_a_large_result_is_clipped_to_the_limit_with_a_note() -> None:
    big = "x" * 100_000
    out = bound_result(_result(mcp_types.TextContent(type="text", text="head"),
                               mcp_types.TextContent(type="text", text=big),
                               mcp_types.ImageContent(type="image", data="A" * 50_000, mime_type="image/png"),
                               structured={"r": big}), 4096)
    assert out.truncated and out.structured is None
    assert out.content[0] == {"type": "text", "text": "head"}
    assert 0 < len(out.content[1]["text"]) < 4096
    assert all(block["type"] == "text" for block in out.content)  # the image did not fit
    assert "result clipped" in out.content[-1]["text"]
    assert len(msgspec.json.encode(out.content)) <= 4096 + 200  # the note is the only excess
