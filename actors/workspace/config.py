"""The ``[workspaces]`` section: where session worktrees live and how git is run for them.

Example::

    [workspaces]
    root = "~/corral-worktrees"   # default: <state dir>/worktrees
    timeout = 120.0               # seconds one git command may take before its group is killed
    diff_limit = 1048576          # bytes of unified diff a workspace.diff returns at most
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated

import msgspec
from msgspec import Meta, Struct

__all__ = ["WorkspacesConfig", "load_workspaces_config", "workspaces_root"]

_Seconds = Annotated[float, Meta(gt=0)]
_Bytes = Annotated[int, Meta(ge=1024)]


class WorkspacesConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[workspaces]``: session worktrees (``session.create {workspace: {mode: worktree}}``)."""

    root: str | None = None  # directory of the worktrees; None: <state dir>/worktrees
    git: str = "git"  # the git executable (looked up on PATH)
    timeout: _Seconds = 120.0  # one git command; past it the process group is killed
    diff_limit: _Bytes = 1024 * 1024  # a longer diff is cut, with `truncated: true`


def workspaces_root(config: WorkspacesConfig, state_dir: Path) -> Path:
    """The directory worktrees are made in: ``root`` (``~`` expanded; relative to the state
    directory when relative), else ``<state dir>/worktrees``."""
    if config.root is None:
        return state_dir / "worktrees"
    return state_dir / os.path.expanduser(config.root)  # an absolute root replaces state_dir


def load_workspaces_config(source: Path | None) -> tuple[WorkspacesConfig, list[str]]:
    """The ``[workspaces]`` table of the config file ``source`` (defaults without one), and warnings.

    A bridge until the daemon's config root declares ``workspaces`` itself (as ``[lsp]`` does
    today): the generic loader has already refused bad TOML, so only this table is decoded; a
    bad value leaves the whole section at its defaults, with a warning naming it.
    """
    if source is None:
        return WorkspacesConfig(), []
    try:
        table = tomllib.loads(source.read_text(encoding="utf-8")).get("workspaces", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return WorkspacesConfig(), [f"workspaces: cannot read {source}: {exc}"]
    try:
        return msgspec.convert(table, WorkspacesConfig), []
    except msgspec.ValidationError as exc:
        return WorkspacesConfig(), [f"bad value in 'workspaces': {exc}; using the [workspaces] defaults"]
