"""Branch and base names: what a client may ask for, and the default branch of a session.

A name reaches git as an argument, so anything git could read as an option (a leading ``-``),
a range (``a..b``), a path out of ``refs/heads`` (``../x``) or a second argument (NUL, a
newline) is refused here, with a ``bad_request`` that says why in git's terms, before any
process runs. Branch names follow git's ``check-ref-format`` rules for ``refs/heads/<name>``
(and ``git branch``'s ban on a leading ``-`` and on ``HEAD``); a base is any revision git can
resolve to a commit, which is checked later by git itself.
"""

from __future__ import annotations

import re

from protocol.errors import BadRequest

__all__ = ["MAX_NAME", "check_base", "check_branch", "default_branch", "ref_part"]

MAX_NAME = 200
"""Longest branch or base accepted (git has no limit, but every ref is a file name too)."""

_FORBIDDEN = frozenset(" ~^:?*[\\")
_PART_LIMIT = 60
_UNSAFE_PART = re.compile(r"[^A-Za-z0-9._-]+")


def check_branch(name: str) -> str:
    """``name`` if git accepts it as a new branch; else ``BadRequest`` naming the rule it breaks."""
    reason = _branch_problem(name)
    if reason is not None:
        raise BadRequest(f"workspace.branch {_show(name)} is not a valid git branch name: {reason}",
                         data={"field": "workspace.branch"})
    return name


def check_base(base: str) -> str:
    """``base`` if it can be handed to git as one revision; else ``BadRequest``.

    Whether it names a commit is git's to say (``rev-parse``), later.
    """
    reason = _common_problem(base)
    if reason is None and ".." in base:
        reason = "'..' makes a range, and git needs one commit"
    if reason is not None:
        raise BadRequest(f"workspace.base {_show(base)} is not a git revision corral accepts: {reason}",
                         data={"field": "workspace.base"})
    return base


def default_branch(label: str) -> str:
    """``corral/<label>``, with ``label`` (a session name or id) made into a valid ref part."""
    return f"corral/{ref_part(label) or 'session'}"


def ref_part(text: str) -> str:
    """``text`` as one valid ref component: runs of anything but letters, digits, ``.``, ``_``
    and ``-`` become one ``-``; no leading or trailing ``-`` or ``.``, no ``..``, no trailing
    ``.lock``; at most 60 characters. May be empty."""
    part = _UNSAFE_PART.sub("-", text)
    while ".." in part:
        part = part.replace("..", ".")
    part = part[:_PART_LIMIT].lstrip("-.")
    while part.endswith((".", ".lock", "-")):
        part = part.removesuffix(".lock").rstrip(".-")
    return part


def _branch_problem(name: str) -> str | None:
    problem = _common_problem(name)
    if problem is not None:
        return problem
    if name == "HEAD" or name == "@":
        return f"git reserves {name!r}"
    if ".." in name:
        return "git refuses '..' in a ref"
    if "@{" in name:
        return "git refuses '@{' in a ref"
    bad = sorted({c for c in name if c in _FORBIDDEN})
    if bad:
        return f"git refuses {', '.join(repr(c) for c in bad)} in a ref"
    if name.startswith("/") or name.endswith("/") or "//" in name:
        return "git refuses an empty path component"
    if name.endswith("."):
        return "git refuses a ref that ends with '.'"
    for component in name.split("/"):
        if component.startswith("."):
            return "git refuses a path component that starts with '.'"
        if component.endswith(".lock"):
            return "git refuses a path component that ends with '.lock'"
    return None


def _common_problem(name: str) -> str | None:
    if not name:
        return "it is empty"
    if len(name) > MAX_NAME:
        return f"it is {len(name)} characters long (at most {MAX_NAME})"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "git refuses control characters (NUL, newline, …)"
    if name.startswith("-"):
        return "a leading '-' would be read by git as an option"
    return None


def _show(name: str) -> str:
    return repr(name if len(name) <= 40 else name[:40] + "…")
