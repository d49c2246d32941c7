"""Shell-style globs over ``/``-separated relative paths, as regular expressions.

The syntax is gitignore's: ``*`` and ``?`` never cross a ``/``; ``**`` as a whole path segment
spans any number of directories (``**/x``, ``a/**/b``, ``a/**``); ``[abc]``, ``[a-z]`` and
``[!abc]`` are character classes; a backslash makes the next character literal. An unclosed
``[`` is a literal ``[``. Used by find, grep's ``glob`` and the gitignore rules.
"""

from __future__ import annotations

import re


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex that ``fullmatch``es exactly the paths ``pattern`` names."""
    return re.compile(glob_regex(pattern), re.DOTALL)


def glob_regex(pattern: str) -> str:
    """The regular-expression source for ``pattern`` (to be used with ``fullmatch``)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/"):
            if pattern.startswith("**/", i):
                out.append("(?:.*/)?")
                i += 3
                continue
            if i + 2 == n:
                out.append(".*")
                i += 2
                continue
        if c == "*":
            while i + 1 < n and pattern[i + 1] == "*":
                i += 1  # other runs of asterisks are a plain *
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (close := _class_end(pattern, i)) != -1:
            out.append(_char_class(pattern[i + 1 : close]))
            i = close
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start``, or -1."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1  # a ] first in the class is literal
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "]":
            return i
        i += 1
    return -1


def _char_class(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    chars: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            i += 1
            chars.append(re.escape(body[i]))
        elif c == "-":
            chars.append("-")
        else:
            chars.append(re.escape(c))
        i += 1
    # A class never matches the separator, as in git.
    return f"(?!/)[{'^' if negate else ''}{''.join(chars)}]"
