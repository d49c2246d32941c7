"""Where ``old_string`` is in a file, and what the file becomes when it is replaced.

Pure functions over LF-normalized, BOM-free text. Three strategies, tried in order, and the
first that finds anything decides:

1. ``exact``: the text as given.
2. ``trailing_whitespace``: whole lines equal once trailing spaces and tabs are ignored (models
   often drop them); the replacement is used as given.
3. ``indentation``: whole lines equal up to one uniform indentation difference (a model that
   re-indented a snippet); the replacement gets the same difference applied.

Several matches with ``replace_all`` false is an ``ambiguous_match`` listing every candidate's
first line, and nothing changes. Matches never overlap (the earliest wins).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import NamedTuple

from .errors import ToolError, ToolErrorCode
from .outcome import MatchKind

_WS = " \t"


class Replacement(NamedTuple):
    """The edited text and how it came about."""

    text: str
    replaced: int
    kind: MatchKind
    first_line: int


class _Span(NamedTuple):
    start: int
    end: int
    new: str


def apply_edit(text: str, old: str, new: str, *, replace_all: bool) -> Replacement:
    """Replace ``old`` by ``new`` in ``text``; raises ``no_match`` or ``ambiguous_match``."""
    if not old:
        raise ToolError(ToolErrorCode.INVALID_ARGUMENTS, "old_string is empty; use write to create or overwrite a file.")
    if old == new:
        raise ToolError(ToolErrorCode.INVALID_ARGUMENTS, "old_string and new_string are the same; nothing would change.")
    starts = _line_starts(text)
    kind: MatchKind
    for kind, spans in (
        ("exact", _exact(text, old, new)),
        ("trailing_whitespace", _by_lines(text, starts, old, new, _same_trimmed)),
        ("indentation", _by_lines(text, starts, old, new, _same_reindented)),
    ):
        if spans:
            break
    else:
        raise ToolError(
            ToolErrorCode.NO_MATCH,
            "old_string was not found (tried exact, trailing-whitespace-insensitive and "
            "indentation-insensitive matching); read the file again and copy the text exactly.",
        )
    lines = [bisect.bisect_right(starts, s.start) for s in spans]
    if len(spans) > 1 and not replace_all:
        raise ToolError(
            ToolErrorCode.AMBIGUOUS_MATCH,
            f"old_string matches {len(spans)} places (starting at lines {', '.join(map(str, lines))}); "
            "include more surrounding text to pick one, or set replace_all to change them all. "
            "Nothing was changed.",
            candidates=tuple(lines),
        )
    pieces: list[str] = []
    at = 0
    for span in spans:
        pieces += [text[at : span.start], span.new]
        at = span.end
    pieces.append(text[at:])
    return Replacement("".join(pieces), len(spans), kind, lines[0])


def _line_starts(text: str) -> list[int]:
    starts = [0]
    at = text.find("\n")
    while at != -1:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def _exact(text: str, old: str, new: str) -> list[_Span]:
    spans = []
    at = text.find(old)
    while at != -1:
        spans.append(_Span(at, at + len(old), new))
        at = text.find(old, at + len(old))
    return spans


# A line matcher gets the file's window and old_string's lines; it returns the replacement to
# use for that window (``new`` adjusted as needed), or None when the window does not match.
_LineMatcher = Callable[[list[str], list[str], str], "str | None"]


def _by_lines(text: str, starts: list[int], old: str, new: str, matcher: _LineMatcher) -> list[_Span]:
    """Non-overlapping windows of whole lines that ``matcher`` accepts, as spans of ``text``."""
    ends_line = old.endswith("\n")
    old_lines = (old[:-1] if ends_line else old).split("\n")
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # the empty string after the final newline is not a line
    n = len(old_lines)
    spans: list[_Span] = []
    i = 0
    while i + n <= len(lines):
        replacement = matcher(lines[i : i + n], old_lines, new)
        if replacement is None:
            i += 1
            continue
        end = starts[i + n - 1] + len(lines[i + n - 1])
        if ends_line and end < len(text):
            end += 1  # old_string ends with a newline: the window takes its line's newline along
        elif ends_line:
            replacement = replacement.removesuffix("\n")  # the file's last line has none
        spans.append(_Span(starts[i], end, replacement))
        i += n
    return spans


def _same_trimmed(window: list[str], old_lines: list[str], new: str) -> str | None:
    if all(t.rstrip(_WS) == o.rstrip(_WS) for t, o in zip(window, old_lines, strict=True)):
        return new
    return None


def _same_reindented(window: list[str], old_lines: list[str], new: str) -> str | None:
    """``new`` re-indented when the window is ``old_lines`` shifted by one indentation delta."""
    pairs = [(t.rstrip(_WS), o.rstrip(_WS)) for t, o in zip(window, old_lines, strict=True)]
    if any(bool(t.strip()) != bool(o.strip()) for t, o in pairs):
        return None
    solid = [(t, o) for t, o in pairs if t.strip()]
    if not solid:
        return None
    t0, o0 = solid[0]
    ti, oi = t0[: len(t0) - len(t0.lstrip(_WS))], o0[: len(o0) - len(o0.lstrip(_WS))]
    if ti.startswith(oi):
        delta, deeper = ti[len(oi) :], True  # the file is indented more than old_string
    elif oi.startswith(ti):
        delta, deeper = oi[len(ti) :], False
    else:
        return None
    if not delta:
        return None
    if not all((t == delta + o) if deeper else (o == delta + t) for t, o in solid):
        return None
    shifted = (
        (line if not line.strip() else delta + line if deeper else line.removeprefix(delta))
        for line in new.split("\n")
    )
    return "\n".join(shifted)
