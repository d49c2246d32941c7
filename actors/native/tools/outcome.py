"""What a tool call returns: the text the model sees, an error flag and code, and typed extras.

The extras (diff, hash, line window, exit code, ...) are for the worker and for clients (a
``tool`` event can carry the diff); only ``text`` counts against the output budgets.
``msgspec.to_builtins(outcome)`` gives a compact dict (defaults are omitted) fit for an ADK
function response.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .errors import ToolError, ToolErrorCode

MatchKind = Literal["exact", "trailing_whitespace", "indentation"]


class ToolOutcome(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The result of one tool call. ``code`` is set exactly when ``is_error`` is."""

    text: str
    is_error: bool = False
    code: ToolErrorCode | None = None
    path: str | None = None
    """The file or directory acted on, relative to the workspace root (``/``-separated)."""
    created: bool | None = None
    """write: whether the file did not exist before."""
    diff: str | None = None
    """write/edit: unified diff of the change (bounded; a new file is diffed against empty)."""
    hash: str | None = None
    """read: sha256 of the whole file; write/edit: sha256 of what was written."""
    total_lines: int | None = None
    start_line: int | None = None
    end_line: int | None = None
    """read: the 1-based inclusive window actually returned."""
    match: MatchKind | None = None
    replacements: int | None = None
    candidates: tuple[int, ...] = ()
    """edit: 1-based first lines of every candidate of an ambiguous match."""
    exit_code: int | None = None
    """bash: the shell's exit status (negative: killed by that signal)."""
    count: int | None = None
    """grep/find/ls: how many results are shown."""
    truncated: bool = False
    """Some output was left out (elided bytes, capped result counts, a capped read window)."""

    @classmethod
    def error(cls, code: ToolErrorCode, message: str, *, candidates: tuple[int, ...] = ()) -> ToolOutcome:
        """An error outcome: the message is what the model reads."""
        return cls(text=message, is_error=True, code=code, candidates=candidates)

    @classmethod
    def from_error(cls, exc: ToolError) -> ToolOutcome:
        """The outcome a raised ``ToolError`` stands for."""
        return cls.error(exc.code, exc.message, candidates=exc.candidates)
