"""The frontmatter of instruction, rule and skill files: a small YAML subset, read without YAML.

A document may open with a ``---`` line, a block of ``key: value`` lines and a closing ``---``
line; what follows is the body. The subset is what Claude, Copilot and Agent Skills files use:

* ``key: value`` — a scalar (surrounding single or double quotes are removed);
* ``key: [a, "b", c]`` — a flow list;
* ``key:`` followed by ``- item`` lines — a block list;
* ``key: |`` / ``key: >`` followed by indented lines — a block scalar (joined with newlines or
  spaces); other indented lines continue the previous scalar (folded with a space);
* ``#`` comment lines and blank lines are skipped.

Anything else (nested maps, anchors) is kept as the raw text of the value, so a file with
richer YAML still loads; only the keys corral reads matter. No YAML library: frontmatter is
untrusted input and this parser cannot be made to build objects or run for long.
"""

from __future__ import annotations

__all__ = ["Frontmatter", "as_list", "split_frontmatter"]

Frontmatter = dict[str, str | list[str]]
"""Keys (as written) → a scalar or a list of scalars."""

_MAX_LINES = 400


def split_frontmatter(text: str) -> tuple[Frontmatter, str]:
    """``(fields, body)``; a document without a closed frontmatter block has no fields and is
    all body."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, min(len(lines), _MAX_LINES)):
        if lines[end].strip() == "---":
            return _parse(lines[1:end]), "\n".join(lines[end + 1:])
    return {}, text


def as_list(value: str | list[str] | None) -> list[str]:
    """A field as a list: lists as they are; a scalar split on commas (``"a, b"`` → two);
    missing → empty. Commas inside parentheses do not split (``Bash(git diff:*, x)``)."""
    if value is None:
        return []
    if isinstance(value, list):
        return [item for item in value if item]
    out: list[str] = []
    depth, start = 0, 0
    for i, c in enumerate(value):
        depth += (c == "(") - (c == ")")
        if c == "," and depth <= 0:
            out.append(value[start:i])
            start = i + 1
    out.append(value[start:])
    return [item.strip() for item in out if item.strip()]


def _parse(lines: list[str]) -> Frontmatter:
    fields: Frontmatter = {}
    key: str | None = None
    block: str | None = None  # "|" or ">" while a block scalar is read
    for raw in lines:
        stripped = raw.strip()
        if not stripped or (stripped.startswith("#") and block is None):
            continue
        indented = raw[:1] in (" ", "\t")
        if key is not None and indented or (key is not None and stripped.startswith("- ")
                                             and isinstance(fields.get(key), list)):
            _continue(fields, key, stripped, block)
            continue
        name, colon, value = raw.partition(":")
        if not colon or not name.strip():
            key = None
            continue
        key, value = name.strip(), value.strip()
        block = None
        if value in ("|", ">", "|-", ">-"):
            block, fields[key] = value[0], ""
        elif value == "":
            fields[key] = []
        elif value.startswith("[") and value.endswith("]"):
            fields[key] = [_unquote(item) for item in value[1:-1].split(",") if item.strip()]
        else:
            fields[key] = _unquote(value)
    return fields


def _continue(fields: Frontmatter, key: str, stripped: str, block: str | None) -> None:
    current = fields[key]
    if isinstance(current, list):
        if stripped.startswith("- ") or stripped == "-":
            current.append(_unquote(stripped[1:].strip()))
        elif not current:
            fields[key] = stripped  # "key:" then an indented scalar
        return
    joiner = "\n" if block == "|" else " "
    fields[key] = f"{current}{joiner}{stripped}" if current else stripped


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
