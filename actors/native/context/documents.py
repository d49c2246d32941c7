"""Reading one instruction file: bounded UTF-8, frontmatter, and Claude ``@path`` imports.

A ``Document`` is an instruction file as loaded: its ``parts`` are the file's own body first,
then each file it imports, depth-first in order of appearance. Imports are Claude's syntax: a
token ``@path`` (``@docs/style.md``, ``@./x.md``, ``@~/notes.md``, ``@/abs/file.md``) outside
code spans and fenced blocks, not preceded by a word character (so ``a@b.c`` is no import).
Relative paths resolve against the importing file's directory, ``~/`` against the home.

Rules, each with a structured warning when it bites (``ContextWarning``):

* an import must resolve (real path, symlinks followed) inside one of the document's allowed
  roots — the workspace for repository files, the home for user files, plus the configured
  import roots — else ``context.import_outside`` and it is skipped;
* imports nest at most ``max_import_depth`` levels (``context.import_depth``);
* a file is read only if it is a regular file of at most ``max_file_bytes``
  (``context.file_too_large``) in UTF-8 (``context.not_utf8``);
* an import seen before in the same document (a cycle, a repeat) is skipped silently, and so is
  a token naming no file (most ``@word`` text is not meant as an import).

Reading is bounded file I/O only: nothing is run, nothing is fetched.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

import msgspec

from .frontmatter import Frontmatter, split_frontmatter

__all__ = ["ContextWarning", "Document", "Part", "load_document", "read_text"]


class ContextWarning(msgspec.Struct, frozen=True, kw_only=True):
    """Something discovery or assembly skipped or cut, and why; ``code`` is stable."""

    code: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.code}: {self.message}"


class Part(msgspec.Struct, frozen=True, kw_only=True):
    """One file's text inside a document: the document's own body or an import."""

    path: str
    real: str
    digest: str
    text: str


class Document(msgspec.Struct, frozen=True, kw_only=True):
    """A loaded file: its frontmatter and its parts (own body first, then imports)."""

    path: str
    fields: Frontmatter
    parts: tuple[Part, ...]

    @property
    def size(self) -> int:
        """UTF-8 bytes of all parts."""
        return sum(len(p.text.encode()) for p in self.parts)


_IMPORT = re.compile(r"(?<![\w@`/])@((?:~/|\.{1,2}/|/)?[\w.\-][\w.\-/]*)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SPAN = re.compile(r"`[^`\n]*`")


def read_text(path: Path, max_bytes: int, warnings: list[ContextWarning]) -> str | None:
    """The UTF-8 text of regular file ``path`` (at most ``max_bytes``), or ``None`` with a
    warning; a missing file is ``None`` with none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        warnings.append(ContextWarning(code="context.unreadable", path=str(path),
                                       message=exc.strerror or str(exc)))
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device is never read
            return None
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        warnings.append(ContextWarning(code="context.file_too_large", path=str(path),
                                       message=f"larger than {max_bytes} bytes; skipped"))
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        warnings.append(ContextWarning(code="context.not_utf8", path=str(path),
                                       message="not UTF-8 text; skipped"))
        return None


def load_document(path: Path, *, roots: Sequence[Path], home: Path | None, max_file_bytes: int,
                  max_import_depth: int, warnings: list[ContextWarning]) -> Document | None:
    """``path`` with its imports (see the module docstring), or ``None`` if it cannot be read."""
    text = read_text(path, max_file_bytes, warnings)
    if text is None:
        return None
    fields, body = split_frontmatter(text)
    real = os.path.realpath(path)
    parts = [_part(path, real, body)]
    seen = {real}
    _imports(path, body, 1, parts, seen, roots=[os.path.realpath(r) for r in roots], home=home,
             max_file_bytes=max_file_bytes, max_depth=max_import_depth, warnings=warnings)
    return Document(path=str(path), fields=fields, parts=tuple(parts))


def _imports(path: Path, body: str, depth: int, parts: list[Part], seen: set[str], *,
             roots: list[str], home: Path | None, max_file_bytes: int, max_depth: int,
             warnings: list[ContextWarning]) -> None:
    for token in _tokens(body):
        target = _target(token, path.parent, home)
        if target is None or not target.is_file():
            continue
        real = os.path.realpath(target)
        if real in seen:
            continue
        if not any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots):
            warnings.append(ContextWarning(
                code="context.import_outside", path=str(path),
                message=f"@{token} resolves to {real}, outside the allowed roots; skipped"))
            continue
        if depth > max_depth:
            warnings.append(ContextWarning(
                code="context.import_depth", path=str(path),
                message=f"@{token} is nested deeper than {max_depth} imports; skipped"))
            continue
        text = read_text(target, max_file_bytes, warnings)
        if text is None:
            continue
        seen.add(real)
        _, imported = split_frontmatter(text)
        parts.append(_part(target, real, imported))
        _imports(target, imported, depth + 1, parts, seen, roots=roots, home=home,
                 max_file_bytes=max_file_bytes, max_depth=max_depth, warnings=warnings)


def _tokens(body: str) -> list[str]:
    """The import tokens outside fenced blocks and code spans, in order."""
    out: list[str] = []
    fenced = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out += [m.group(1).rstrip(".") for m in _IMPORT.finditer(_SPAN.sub("", line))]
    return out


def _target(token: str, base: Path, home: Path | None) -> Path | None:
    if token.startswith("~/"):
        return home / token[2:] if home is not None else None
    return Path(token) if token.startswith("/") else base / token


def _part(path: Path, real: str, text: str) -> Part:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Part(path=str(path), real=real, digest=digest, text=text.strip())
