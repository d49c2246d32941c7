"""The tool table the worker turns into ADK function declarations, and one call entry point.

Each ``ToolSpec`` carries what a declaration needs (name, description, an inline JSON schema of
the parameters with no ``$ref``) and what corral's ``tool`` events need (the coarse ``kind``).
``call_tool`` takes the raw argument object a model produced, validates it against the
parameter Struct (numbers given as strings are accepted), and runs the tool; bad arguments and
unknown names become error outcomes, like every other failure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec

from protocol.events import ToolKind

from .errors import ToolErrorCode
from .files import edit, read, write
from .outcome import ToolOutcome
from .params import BashParams, EditParams, FindParams, GrepParams, LsParams, ReadParams, WriteParams
from .search import find, grep, ls
from .shell import bash
from .workspace import Workspace


@dataclasses.dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool as the model and corral's events see it."""

    name: str
    kind: ToolKind
    params: type[msgspec.Struct]
    description: str
    schema: dict[str, Any]
    """JSON schema of the parameters: ``{"type": "object", "properties": ..., "required": ...}``."""
    run: Callable[[Workspace, Any], Awaitable[ToolOutcome]]


async def call_tool(ws: Workspace, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
    """Run tool ``name`` with the model's ``arguments``; never raises except on cancellation."""
    spec = TOOLS_BY_NAME.get(name)
    if spec is None:
        return ToolOutcome.error(
            ToolErrorCode.UNKNOWN_TOOL, f"there is no tool named {name!r}; the tools are {', '.join(TOOLS_BY_NAME)}."
        )
    try:
        params = msgspec.convert(dict(arguments), spec.params, strict=False)
    except msgspec.ValidationError as exc:
        return ToolOutcome.error(ToolErrorCode.INVALID_ARGUMENTS, f"invalid arguments for {name}: {exc}")
    return await spec.run(ws, params)


def _schema(params: type[msgspec.Struct]) -> dict[str, Any]:
    """The parameters' object schema inlined (declarations take no ``$defs``), without titles."""
    body = msgspec.json.schema(params)["$defs"][params.__name__]
    schema: dict[str, Any] = {"type": "object", "properties": body["properties"]}
    if body.get("required"):
        schema["required"] = body["required"]
    return schema


def _spec(name: str, kind: ToolKind, params: type[msgspec.Struct], run: Callable[[Workspace, Any], Awaitable[ToolOutcome]], description: str) -> ToolSpec:
    return ToolSpec(name, kind, params, " ".join(description.split()), _schema(params), run)


TOOLS: tuple[ToolSpec, ...] = (
    _spec("read", "read", ReadParams, read, """
        Read a UTF-8 text file. Shows numbered lines (number, tab, text), by default the first
        2000; a footer gives the window and total line count, and the offset to continue from.
        Binary files and files over 5 MiB are refused. A file must be read in this session
        before write or edit may change it."""),
    _spec("write", "edit", WriteParams, write, """
        Create a file, or replace the whole content of one (parent directories are created).
        An existing file must have been read in this session (your own write or edit of it
        counts) and must not have changed since, or the write is refused: read it again. Prefer
        edit to change part of a file. Existing permissions are kept; new files get mode 0644."""),
    _spec("edit", "edit", EditParams, edit, """
        Replace old_string with new_string in an existing file. Copy old_string exactly from the
        file (without read's line-number prefix); if it is not found, differences in trailing
        whitespace and in uniform indentation are tolerated. It must occur once unless
        replace_all is true: if it occurs several times, their line numbers are listed and
        nothing changes, so add surrounding lines to make it unique. The file must have been
        read in this session and be unchanged since. Line endings, a BOM and the presence of a
        final newline are kept."""),
    _spec("bash", "exec", BashParams, bash, """
        Run a command with bash in the working directory, in a fresh shell each time (cd and
        variables do not carry over). There is no stdin, so avoid interactive commands. After
        timeout seconds (default 120, at most 600) the command and everything it started are
        killed. The result shows stdout, then stderr, then the exit code; long output keeps its
        beginning and end. Background jobs still holding the output when the command ends are
        killed; redirect their output to a file to keep them running."""),
    _spec("grep", "search", GrepParams, grep, """
        Search file contents for a regular expression (Python re syntax), line by line, in one
        file or under a directory (default: the whole working directory). Files ignored by
        .gitignore, binary files and symlinks are skipped; glob limits the files searched (e.g.
        *.py, or src/**/*.ts). Matches are shown as path:line:text with paths relative to the
        working directory, at most 200."""),
    _spec("find", "search", FindParams, find, """
        Find files and directories whose name matches a glob (e.g. *.py, test_*) under a
        directory (default: the whole working directory); a pattern containing / is matched
        against the path below that directory instead (e.g. src/**/*.ts). Honours .gitignore
        and never enters symlinked directories. Paths are relative to the working directory,
        sorted, directories ending with /; at most 1000."""),
    _spec("ls", "search", LsParams, ls, """
        List one directory (default: the working directory): sorted names, directories ending
        with /, symlinks as name@ -> target. Entries ignored by .gitignore are left out and
        counted."""),
)
TOOLS_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}
