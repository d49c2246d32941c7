"""The file tools: read, write and edit.

read shows a numbered window of a UTF-8 text file and records what it saw (``Workspace.reads``).
write and edit change a file only if the session saw its current content (read-before-write,
stale detection), replace it atomically keeping its permission bits, record what they wrote
(so the session may change it again without re-reading), and return a unified diff.
edit keeps the file's BOM, its dominant line ending and whether it ends with a newline.
"""

from __future__ import annotations

import os
import stat
import threading

from .errors import ToolError, ToolErrorCode
from .invoke import guarded, in_thread
from .reads import content_hash
from .matching import apply_edit
from .outcome import ToolOutcome
from .params import EditParams, ReadParams, WriteParams
from .textfile import BOM, NEW_FILE_MODE, atomic_write, dominant_newline, load_text, split_lines, unified_diff
from .workspace import Workspace

_FOOTER_RESERVE = 200


async def read(ws: Workspace, params: ReadParams) -> ToolOutcome:
    """Show lines ``offset``.. of a text file, numbered; never raises (cancellation aside)."""
    return await guarded(ws, lambda: in_thread(_read, ws, params))


async def write(ws: Workspace, params: WriteParams) -> ToolOutcome:
    """Create or overwrite a file with ``content``; never raises (cancellation aside)."""
    return await guarded(ws, lambda: in_thread(_write, ws, params))


async def edit(ws: Workspace, params: EditParams) -> ToolOutcome:
    """Replace ``old_string`` by ``new_string`` in a file; never raises (cancellation aside)."""
    return await guarded(ws, lambda: in_thread(_edit, ws, params))


def _read(stop: threading.Event, ws: Workspace, params: ReadParams) -> ToolOutcome:
    path = ws.resolve(params.path)
    display = ws.display(path)
    loaded = load_text(path, display, ws.limits.read_max_bytes)
    ws.reads.record(str(path), loaded.raw, loaded.stat)
    digest = content_hash(loaded.raw)
    lines = split_lines(loaded.text)
    total = len(lines)
    if total == 0:
        return ToolOutcome(text=f"{display} is empty (0 lines).", path=display, hash=digest, total_lines=0)
    first = params.offset or 1
    limit = params.limit or ws.limits.read_default_lines
    if first > total:
        raise ToolError(ToolErrorCode.INVALID_ARGUMENTS, f"offset {first} is past the end of {display} ({total} lines).")
    budget = ws.limits.call_output_bytes - _FOOTER_RESERVE
    width = ws.limits.line_max_chars
    shown: list[str] = []
    used, last, cut = 0, first - 1, False
    for number in range(first, min(total, first + limit - 1) + 1):
        line = lines[number - 1]
        if len(line) > width:
            line, cut = f"{line[:width]} [… line cut at {width} of {len(line)} characters]", True
        entry = f"{number:>6}\t{line}\n"
        used += len(entry.encode())
        if used > budget and shown:
            cut = True
            break
        shown.append(entry)
        last = number
    more = f"; continue with offset={last + 1}" if last < total else ""
    shown.append(f"[{display}: lines {first}-{last} of {total}{more}]")
    return ToolOutcome(
        text="".join(shown), path=display, hash=digest, total_lines=total,
        start_line=first, end_line=last, truncated=cut or last < total,
    )


def _write(stop: threading.Event, ws: Workspace, params: WriteParams) -> ToolOutcome:
    path = ws.resolve(params.path)
    display = ws.display(path)
    data = _encode(params.content, "content")
    with ws.mutation_lock:
        try:
            st: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            st = None
        if st is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            old, mode, owner = "", NEW_FILE_MODE, None
        else:
            if not stat.S_ISREG(st.st_mode):
                raise ToolError(ToolErrorCode.NOT_A_FILE, f"{display} exists and is not a regular file.")
            seen = ws.reads.require(str(path), display)
            with open(path, "rb") as f:
                current = f.read(seen.size + 1)
            ws.reads.verify(seen, display, current)
            old = current.removeprefix(BOM).decode("utf-8", errors="replace")
            mode, owner = stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)
        ws.reads.record(str(path), data, atomic_write(path, data, mode, owner))
    verb = "Created" if st is None else "Wrote"
    return ToolOutcome(
        text=f"{verb} {display} ({len(split_lines(params.content))} lines, {len(data)} bytes).",
        path=display, created=st is None, hash=content_hash(data),
        diff=unified_diff(old, params.content, display, created=st is None, max_bytes=ws.limits.diff_max_bytes),
    )


def _edit(stop: threading.Event, ws: Workspace, params: EditParams) -> ToolOutcome:
    path = ws.resolve(params.path)
    display = ws.display(path)
    with ws.mutation_lock:
        try:
            loaded = load_text(path, display, ws.limits.read_max_bytes)
        except ToolError as exc:
            if exc.code is ToolErrorCode.NOT_FOUND:
                raise ToolError(exc.code, f"{display} does not exist; use write to create it.") from None
            raise
        ws.reads.verify(ws.reads.require(str(path), display), display, loaded.raw)
        source = loaded.text.replace("\r\n", "\n")
        change = apply_edit(
            source,
            params.old_string.replace("\r\n", "\n"),
            params.new_string.replace("\r\n", "\n"),
            replace_all=params.replace_all,
        )
        result = _keep_final_newline(source, change.text)
        if dominant_newline(loaded.text) == "\r\n":
            result = result.replace("\n", "\r\n")
        data = (BOM if loaded.bom else b"") + _encode(result, "new_string")
        st = loaded.stat
        ws.reads.record(str(path), data, atomic_write(path, data, stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)))
    plural = "occurrence" if change.replaced == 1 else "occurrences"
    how = "" if change.kind == "exact" else f" ({change.kind.replace('_', ' ')} differences ignored)"
    return ToolOutcome(
        text=f"Edited {display}: replaced {change.replaced} {plural} starting at line {change.first_line}{how}.",
        path=display, hash=content_hash(data), match=change.kind, replacements=change.replaced,
        diff=unified_diff(loaded.text, result, display, created=False, max_bytes=ws.limits.diff_max_bytes),
    )


def _keep_final_newline(before: str, after: str) -> str:
    """``after`` ending with a newline exactly when ``before`` did (an emptied file stays empty)."""
    if before.endswith("\n") and after and not after.endswith("\n"):
        return after + "\n"
    if not before.endswith("\n") and after.endswith("\n"):
        return after[:-1]
    return after


def _encode(text: str, field: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate (possible in decoded JSON) is the model's mistake."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(ToolErrorCode.INVALID_ARGUMENTS, f"{field} is not valid text: {exc.reason}") from None
