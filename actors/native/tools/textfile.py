"""Text files on disk: loading UTF-8 safely, line endings, atomic replacement, and diffs.

``load_text`` is the one gate for content a tool shows or edits: regular files only, at most
the read limit, no NUL bytes, valid UTF-8 (a leading BOM is remembered and stripped).
``atomic_write`` never leaves a half-written file: same-directory temp file, fsync, rename over
the target, fsync of the directory so the rename itself survives a crash.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import stat
import tempfile
from pathlib import Path

from .bounded import clip
from .errors import ToolError, ToolErrorCode

BOM = b"\xef\xbb\xbf"
NEW_FILE_MODE = 0o644


@dataclasses.dataclass(frozen=True, slots=True)
class TextFile:
    """A loaded text file: its exact bytes, its text without the BOM, and its stat."""

    raw: bytes
    text: str
    bom: bool
    stat: os.stat_result


def load_text(path: Path, display: str, max_bytes: int) -> TextFile:
    """Read ``path`` as UTF-8 text, or raise the ``ToolError`` saying why it cannot be."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ToolError(ToolErrorCode.NOT_FOUND, f"{display} does not exist.") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(ToolErrorCode.NOT_A_FILE, f"{display} is a directory; use ls to list it.")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(ToolErrorCode.NOT_A_FILE, f"{display} is not a regular file.")
    if st.st_size > max_bytes:
        raise _too_large(display, st.st_size, max_bytes)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise _too_large(display, len(raw), max_bytes)
    if b"\x00" in raw:
        raise ToolError(ToolErrorCode.BINARY_FILE, f"{display} is a binary file (it contains NUL bytes); it cannot be read as text.")
    bom = raw.startswith(BOM)
    try:
        text = raw[len(BOM) if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            ToolErrorCode.BINARY_FILE,
            f"{display} is not UTF-8 text (invalid byte at offset {exc.start}); it cannot be read as text.",
        ) from None
    return TextFile(raw=raw, text=text, bom=bom, stat=st)


def _too_large(display: str, size: int, max_bytes: int) -> ToolError:
    return ToolError(
        ToolErrorCode.TOO_LARGE,
        f"{display} is {size} bytes, over the {max_bytes}-byte limit; use grep to find what you need in it.",
    )


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their endings (CRLF or LF); a final newline adds no line."""
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def dominant_newline(text: str) -> str:
    """``"\\r\\n"`` when most line endings of ``text`` are CRLF, else ``"\\n"``."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf > text.count("\n") - crlf else "\n"


def atomic_write(path: Path, data: bytes, mode: int, owner: tuple[int, int] | None = None) -> os.stat_result:
    """Replace (or create) ``path`` with ``data`` and permission bits ``mode``; its new stat.

    ``owner`` (uid, gid) is given back to a replaced file where the OS allows it (as root), so
    an edit does not quietly take a file over; otherwise the new file is ours.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if owner is not None and owner != (os.getuid(), os.getgid()):
                with contextlib.suppress(PermissionError):
                    os.fchown(f.fileno(), *owner)
            os.fchmod(f.fileno(), mode)  # explicit, so the umask does not decide (and after chown)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return os.stat(path)


def unified_diff(old: str, new: str, display: str, *, created: bool, max_bytes: int) -> str:
    """A unified diff from ``old`` to ``new`` (line endings normalized), cut to ``max_bytes``."""
    lines = difflib.unified_diff(
        old.replace("\r\n", "\n").splitlines(keepends=True),
        new.replace("\r\n", "\n").splitlines(keepends=True),
        fromfile="/dev/null" if created else f"a/{display}",
        tofile=f"b/{display}",
    )
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return clip(text, max_bytes)[0]
