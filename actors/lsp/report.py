"""What a write's diagnostics look like to the model: a report Struct and its ``Diagnostics:`` block.

Pure and free of trio, so the native worker (asyncio) can decode and render a report it got
through the daemon. Only severities 1 (error) and 2 (warning) are kept: pyright and clangd also
publish hints such as "x is not accessed", which would drown the one error that matters.
Lines and columns are 1-based; columns count characters (LSP counts UTF-16 code units).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

import msgspec

from actors.lsp.messages import Diagnostic

__all__ = ["DiagnosticLine", "DiagnosticsQuery", "DiagnosticsReport", "ServerStatus", "lines_of"]

ServerState = Literal["ok", "timeout", "crashed", "failed", "unavailable"]
Severity = Literal["error", "warning"]
_SEVERITY: dict[int, Severity] = {1: "error", 2: "warning"}
_NEWLINES = re.compile(r"\r\n|\r|\n")


class DiagnosticsQuery(msgspec.Struct, frozen=True, kw_only=True):
    """What the native worker asks the daemon (one frame; the answer is a ``DiagnosticsReport``).

    ``text`` set: the file was just written with it (``write``/``edit``). ``text`` None: the
    file's current diagnostics, as it is on disk (the ``diagnostics {path}`` tool). ``path`` is
    relative to the session's cwd or absolute; ``settle_timeout`` None means ``[lsp]``'s.
    """

    path: str
    text: str | None = None
    settle_timeout: float | None = None


class DiagnosticLine(msgspec.Struct, frozen=True, kw_only=True):
    """One diagnostic as the model sees it."""

    path: str
    line: int
    column: int
    severity: Severity
    source: str | None = None
    code: str | None = None
    message: str

    def render(self) -> str:
        """``path:line:col: severity [source code] message``."""
        tag = " ".join(part for part in (self.source, self.code) if part)
        return f"{self.path}:{self.line}:{self.column}: {self.severity} [{tag}] {self.message}"


class ServerStatus(msgspec.Struct, frozen=True, kw_only=True):
    """How one server did: ``ok`` (current diagnostics known), ``timeout`` (none in time),
    ``crashed`` (it died while checking this text; it is being restarted), ``failed``
    (restarted too often, not running), ``unavailable`` (its program is missing)."""

    server: str
    state: ServerState


class DiagnosticsReport(msgspec.Struct, frozen=True, kw_only=True):
    """The diagnostics of one file after a write, from every server that checks it.

    ``servers`` is empty when no server handles the file's extension. ``text()`` is what
    decorates a tool result: empty when there is nothing to say.
    """

    path: str
    diagnostics: list[DiagnosticLine] = []
    servers: list[ServerStatus] = []
    timeout: float = 0.0

    @property
    def timed_out(self) -> list[str]:
        """The servers that gave no current diagnostics within the wait."""
        return [s.server for s in self.servers if s.state == "timeout"]

    def text(self) -> str:
        """A ``Diagnostics:`` block, a note when a server did not answer in time, or ``""``."""
        notes = []
        if late := self.timed_out:
            notes.append(f"no diagnostics from {', '.join(late)} within {self.timeout:g} s")
        if crashed := [s.server for s in self.servers if s.state == "crashed"]:
            notes.append(f"{', '.join(crashed)} crashed while checking this file")
        note = f"({'; '.join(notes)})" if notes else ""
        if self.diagnostics:
            block = "\n".join(["Diagnostics:", *(d.render() for d in self.diagnostics)])
            return f"{block}\n{note}" if note else block
        return f"Diagnostics: {note}" if note else ""


def lines_of(display_path: str, items: Iterable[Diagnostic], text: str) -> list[DiagnosticLine]:
    """The errors and warnings of ``items`` as report lines, in position order.

    ``text`` is the document the positions refer to (for UTF-16 → character columns); a
    diagnostic without a severity counts as an error, as LSP clients usually read it.
    """
    rows = _NEWLINES.split(text) if text else []
    out: list[DiagnosticLine] = []
    for item in items:
        severity = _SEVERITY.get(item.severity if item.severity is not None else 1)
        if severity is None:
            continue
        start = item.range.start
        row = rows[start.line] if 0 <= start.line < len(rows) else ""
        out.append(DiagnosticLine(
            path=display_path, line=start.line + 1, column=_column(row, start.character) + 1,
            severity=severity,
            source=item.source, code=None if item.code is None else str(item.code),
            message=" ".join(item.message.split()),
        ))
    out.sort(key=lambda d: (d.line, d.column))
    return out


def _column(row: str, utf16: int) -> int:
    """The character index in ``row`` at UTF-16 offset ``utf16`` (past the end: counted on)."""
    units = 0
    for index, char in enumerate(row):
        if units >= utf16:
            return index
        units += 2 if ord(char) > 0xFFFF else 1
    return len(row) + max(0, utf16 - units)
