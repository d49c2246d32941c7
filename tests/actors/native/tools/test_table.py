"""The tool table, the call entry point, error codes, output budgets and the public surface."""

from __future__ import annotations

from pathlib import Path

import msgspec

import actors.native.tools as tools
from actors.native.tools import TOOLS, ToolErrorCode, ToolOutcome, Workspace

from .support import call, small


def test_tool_names_kinds_and_parameters_are_the_contract() -> None:
    table = {t.name: (t.kind, sorted(t.schema["properties"]), t.schema.get("required", [])) for t in TOOLS}
    assert table == {
        "read": ("read", ["limit", "offset", "path"], ["path"]),
        "write": ("edit", ["content", "path"], ["path", "content"]),
        "edit": ("edit", ["new_string", "old_string", "path", "replace_all"], ["path", "old_string", "new_string"]),
        "bash": ("exec", ["command", "timeout"], ["command"]),
        "grep": ("search", ["glob", "path", "pattern"], ["pattern"]),
        "find": ("search", ["path", "pattern"], ["pattern"]),
        "ls": ("search", ["path"], []),
    }


def test_schemas_are_inline_objects_fit_for_function_declarations() -> None:
    for spec in TOOLS:
        encoded = msgspec.json.encode(spec.schema)
        assert spec.schema["type"] == "object" and b"$ref" not in encoded and b"null" not in encoded
        assert all("description" in prop for prop in spec.schema["properties"].values())
        assert 100 < len(spec.description) < 800 and "\n" not in spec.description


def test_error_codes_are_pinned() -> None:
    assert [c.value for c in ToolErrorCode] == [
        "unknown_tool", "invalid_arguments", "path_outside_workspace", "not_found", "not_a_file",
        "not_a_directory", "not_read", "stale_read", "no_match", "ambiguous_match", "binary_file",
        "too_large", "timeout", "nonzero_exit", "output_limit", "io_error", "internal",
    ]


def test_bad_calls_are_error_outcomes(ws: Workspace) -> None:
    assert call(ws, "cat", path="x").code is ToolErrorCode.UNKNOWN_TOOL
    assert call(ws, "read").code is ToolErrorCode.INVALID_ARGUMENTS
    assert call(ws, "read", path="x", offset=0).code is ToolErrorCode.INVALID_ARGUMENTS
    assert call(ws, "bash", command="true", timeout="oops").code is ToolErrorCode.INVALID_ARGUMENTS


def test_lenient_numbers_and_unknown_fields(ws: Workspace, root: Path) -> None:
    (root / "f.txt").write_text("a\nb\nc\n")
    outcome = call(ws, "read", path="f.txt", offset="2", limit=1, note="ignored")
    assert (outcome.start_line, outcome.end_line) == (2, 2)


def test_session_output_budget_is_enforced_and_can_be_reset(root: Path) -> None:
    (root / "f.txt").write_text("x" * 300 + "\n")
    ws = small(root, session_output_bytes=500)
    first = call(ws, "read", path="f.txt")
    assert not first.is_error and ws.output_used == len(first.text.encode())
    second = call(ws, "read", path="f.txt")
    assert second.truncated and ws.output_used == 500  # cut to what was left
    spent = call(ws, "bash", command="touch ran")
    assert spent.code is ToolErrorCode.OUTPUT_LIMIT and not (root / "ran").exists()
    ws.reset_output_budget()
    assert not call(ws, "read", path="f.txt").is_error


def test_outcome_encodes_compactly() -> None:
    outcome = ToolOutcome.error(ToolErrorCode.NO_MATCH, "nope")
    assert msgspec.to_builtins(outcome) == {"text": "nope", "is_error": True, "code": "no_match"}


def test_public_surface_is_pinned() -> None:
    public = {n for n in vars(tools) if not n.startswith("_")} - {"annotations"}
    modules = {n for n in public if isinstance(getattr(tools, n), type(tools))}
    assert public - modules == {
        "Workspace", "Limits", "ReadRecord", "ReadRecords", "ToolOutcome", "ToolError", "ToolErrorCode",
        "ToolSpec", "TOOLS", "TOOLS_BY_NAME", "call_tool", "read", "write", "edit", "bash", "grep",
        "find", "ls", "ReadParams", "WriteParams", "EditParams", "BashParams", "GrepParams",
        "FindParams", "LsParams",
    }
