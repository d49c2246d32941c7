"""The search tools: grep (regex over file contents), find (glob over paths), ls (one directory).

All three walk with ``TreeWalk`` (sorted, gitignore-aware, never through symlinks), show paths
relative to the workspace root so they can be passed straight to read, cap their results and
say so when they do. grep skips files that are too large or hold NUL bytes, and says how many.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from msgspec import UnsetType

from .errors import ToolError, ToolErrorCode
from .globs import compile_glob
from .invoke import guarded, in_thread
from .outcome import ToolOutcome
from .params import FindParams, GrepParams, LsParams
from .walk import Entry, TreeWalk
from .workspace import Workspace


async def grep(ws: Workspace, params: GrepParams) -> ToolOutcome:
    """Lines matching ``pattern`` as ``path:line:text``; never raises (cancellation aside)."""
    return await guarded(ws, lambda: in_thread(_grep, ws, params))


async def find(ws: Workspace, params: FindParams) -> ToolOutcome:
    """Paths matching the glob ``pattern``; never raises (cancellation aside)."""
    return await guarded(ws, lambda: in_thread(_find, ws, params))


async def ls(ws: Workspace, params: LsParams) -> ToolOutcome:
    """The entries of one directory; never raises (cancellation aside)."""
    return await guarded(ws, lambda: in_thread(_ls, ws, params))


def _grep(stop: threading.Event, ws: Workspace, params: GrepParams) -> ToolOutcome:
    try:
        regex = re.compile(params.pattern)
    except re.error as exc:
        raise ToolError(ToolErrorCode.INVALID_ARGUMENTS, f"invalid regular expression: {exc}") from None
    target, display = _existing(ws, params.path)
    limits = ws.limits
    walk: TreeWalk | None = None
    files: Iterator[Entry] = iter([Entry(display, target, "file")])
    mode = os.stat(target).st_mode
    if stat.S_ISDIR(mode):
        walk = TreeWalk(ws.root, target, max_entries=limits.walk_max_entries, stop=stop)
        files = _only_files(walk, target, ws.root, params.glob)
    elif not stat.S_ISREG(mode):
        raise ToolError(ToolErrorCode.NOT_A_FILE, f"{display} is neither a regular file nor a directory.")
    hits: list[str] = []
    skipped, capped = 0, False
    for entry in files:
        lines = _text_lines(entry.path, limits.read_max_bytes)
        if lines is None:
            skipped += 1
            continue
        for number, line in enumerate(lines, 1):
            if regex.search(line):
                hits.append(f"{entry.rel}:{number}:{line[: limits.line_max_chars]}")
                if len(hits) >= limits.grep_max_matches:
                    capped = True
                    break
        if capped:
            break
    notes = [f"[showing the first {len(hits)} matches; narrow the pattern, path or glob]"] if capped else []
    if skipped:
        notes.append(f"[{skipped} binary, unreadable or oversized files skipped]")
    if walk is not None and walk.truncated:
        notes.append(f"[search stopped after {limits.walk_max_entries} entries; search a narrower path]")
    body = hits or [f"No lines match {params.pattern!r} in {display}."]
    return ToolOutcome(
        text="\n".join(body + notes), path=display, count=len(hits),
        truncated=capped or bool(walk and walk.truncated),
    )


def _find(stop: threading.Event, ws: Workspace, params: FindParams) -> ToolOutcome:
    target, display = _directory(ws, params.path)
    matcher = compile_glob(params.pattern)
    by_path = "/" in params.pattern
    walk = TreeWalk(ws.root, target, max_entries=ws.limits.walk_max_entries, stop=stop)
    found: list[str] = []
    capped = False
    for entry in walk:
        sub = _below(entry.rel, target, ws.root)
        if matcher.fullmatch(sub if by_path else sub.rsplit("/", 1)[-1]):
            if len(found) >= ws.limits.find_max_results:
                capped = True
                break
            found.append(entry.rel + ("/" if entry.kind == "dir" else ""))
    notes = [f"[showing the first {len(found)} paths; narrow the pattern or path]"] if capped else []
    if walk.truncated:
        notes.append(f"[search stopped after {ws.limits.walk_max_entries} entries; search a narrower path]")
    body = found or [f"No paths match {params.pattern!r} in {display}."]
    return ToolOutcome(text="\n".join(body + notes), path=display, count=len(found), truncated=capped or walk.truncated)


def _ls(stop: threading.Event, ws: Workspace, params: LsParams) -> ToolOutcome:
    target, display = _directory(ws, params.path)
    walk = TreeWalk(ws.root, target, max_entries=ws.limits.ls_max_entries, stop=stop)
    shown = [_describe(e) for e in walk.listing()]
    notes = [f"[showing the first {len(shown)} entries]"] if walk.truncated else []
    if walk.ignored:
        noun = "entry" if walk.ignored == 1 else "entries"
        notes.append(f"[{walk.ignored} {noun} ignored by .gitignore not shown]")
    body = shown or [f"{display} is empty."]
    return ToolOutcome(text="\n".join(body + notes), path=display, count=len(shown), truncated=walk.truncated)


def _existing(ws: Workspace, path: str) -> tuple[Path, str]:
    target = ws.resolve(path)
    if not target.exists():
        raise ToolError(ToolErrorCode.NOT_FOUND, f"{ws.display(target)} does not exist.")
    return target, ws.display(target)


def _directory(ws: Workspace, path: str) -> tuple[Path, str]:
    target, display = _existing(ws, path)
    if not target.is_dir():
        raise ToolError(ToolErrorCode.NOT_A_DIRECTORY, f"{display} is not a directory.")
    return target, display


def _below(rel: str, target: Path, root: Path) -> str:
    """``rel`` (relative to the root) made relative to the search directory ``target``."""
    return rel if target == root else rel[len(target.relative_to(root).as_posix()) + 1 :]


def _only_files(walk: TreeWalk, target: Path, root: Path, glob: str | UnsetType) -> Iterator[Entry]:
    """The regular files of the walk whose name (or path below ``target``) matches ``glob``."""
    matcher = compile_glob(glob) if isinstance(glob, str) else None
    by_path = isinstance(glob, str) and "/" in glob
    for entry in walk:
        if entry.kind != "file":
            continue
        key = _below(entry.rel, target, root) if by_path else entry.rel.rsplit("/", 1)[-1]
        if matcher is None or matcher.fullmatch(key):
            yield entry


def _text_lines(path: Path, max_bytes: int) -> list[str] | None:
    """The lines of a text file (numbered as read numbers them), or None to skip it."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None  # a FIFO swapped in after the walk would block the read
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data:
        return None
    lines = data.decode("utf-8", errors="replace").replace("\r\n", "\n").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _describe(entry: Entry) -> str:
    name = entry.rel.rsplit("/", 1)[-1]
    if entry.kind == "dir":
        return name + "/"
    if entry.kind == "symlink":
        try:
            return f"{name}@ -> {os.readlink(entry.path)}"
        except OSError:
            return name + "@"
    return name
