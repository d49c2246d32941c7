"""The ``[workspaces]`` section: where session worktrees live and how git is run for them.

Example::

    [workspaces]
    root = "~/corral-worktrees"   # default: "worktrees", under the state directory
    timeout = 120.0               # seconds one git command may take before its group is killed
    diff_limit = 1048576          # bytes of unified diff a workspace.diff returns at most
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from msgspec import Meta, Struct

__all__ = ["WorkspacesConfig", "workspaces_root"]

_Seconds = Annotated[float, Meta(gt=0)]
_Bytes = Annotated[int, Meta(ge=1024)]


class WorkspacesConfig(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Section ``[workspaces]``: session worktrees (``session.create {workspace: {mode: worktree}}``)."""

    root: str = "worktrees"  # directory of the worktrees (``~`` expanded), relative to the state directory
    git: str = "git"  # the git executable (looked up on PATH)
    timeout: _Seconds = 120.0  # one git command; past it the process group is killed
    diff_limit: _Bytes = 1024 * 1024  # a longer diff is cut, with `truncated: true`


def workspaces_root(config: WorkspacesConfig, state_dir: Path) -> Path:
    """The directory worktrees are made in: ``root`` (``~`` expanded; relative to the state
    directory when relative: ``<state dir>/worktrees`` by default)."""
    return state_dir / os.path.expanduser(config.root)  # an absolute root replaces state_dir
