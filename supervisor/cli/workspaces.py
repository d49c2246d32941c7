"""The worktree commands of the command line: ``diff``, ``commit``, ``merge``, ``discard``.

Each sends one generic request (``workspace.*``) through the client library and prints its
result: ``diff`` the unified diff (``--stat``: one line per file), ``commit`` and ``merge`` the
new commit's hash. Refusals (``merge_conflict`` with its files, ``target_dirty``,
``session_busy``) are the usual one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import trio

from protocol.errors import ProtocolError
from protocol.messages import (
    CommitResult,
    DiffResult,
    Empty,
    MergeStrategy,
    Request,
    WorkspaceCommit,
    WorkspaceDiff,
    WorkspaceDiscard,
    WorkspaceMerge,
)
from supervisor.statedir import resolve_state_dir

__all__ = ["add_workspace_commands", "ask"]

_R = TypeVar("_R")
Command = Callable[[str, Callable[[argparse.Namespace], int | None], str], argparse.ArgumentParser]

_MARKS = {"added": "A", "modified": "M", "deleted": "D"}


def add_workspace_commands(command: Command) -> None:
    """Add the worktree subcommands through the parser's ``command(name, handler, help)``."""
    sub = command("diff", _diff, "Show a worktree session's changes against its base.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--stat", action="store_true", help="the changed files only")
    sub = command("commit", _commit, "Commit everything uncommitted in a session's worktree.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("-m", "--message", required=True, help="the commit message")
    sub = command("merge", _merge, "Merge a session's worktree branch into the branch its "
                                   "repository has checked out (a merge commit by default).")
    sub.add_argument("id", metavar="ID")
    how = sub.add_mutually_exclusive_group()
    how.add_argument("--squash", action="store_true", help="one commit on top of the target")
    how.add_argument("--rebase", action="store_true", help="replay its commits on top of the target")
    sub = command("discard", _discard, "Remove a session's worktree and branch, unmerged work included.")
    sub.add_argument("id", metavar="ID")
    sub.add_argument("--force", action="store_true", help="close the session first if it is open")


def ask(state_dir: Path, request: Request, result_type: type[_R]) -> _R:
    """Send one request to the daemon of ``state_dir``; its result, checked to be a ``result_type``."""
    # Only these commands need the client library.
    from supervisor.client import open_client

    async def send() -> object:
        async with open_client(state_dir) as client:
            return await client.request(request)

    result = trio.run(send)
    if not isinstance(result, result_type):
        raise ProtocolError(f"{type(request).__name__} answered a {type(result).__name__}")
    return result


def _diff(args: argparse.Namespace) -> None:
    result = ask(_state(args), WorkspaceDiff(id=0, session_id=args.id, stat=args.stat), DiffResult)
    if args.stat:
        for change in result.files:
            print(f"{_MARKS[change.status]}  +{change.added} -{change.removed}  {change.path}")
        print(f"{len(result.files)} file(s) changed")
    elif result.diff:
        sys.stdout.write(result.diff if result.diff.endswith("\n") else result.diff + "\n")


def _commit(args: argparse.Namespace) -> None:
    request = WorkspaceCommit(id=0, session_id=args.id, message=args.message)
    print(ask(_state(args), request, CommitResult).commit)


def _merge(args: argparse.Namespace) -> None:
    strategy: MergeStrategy = "squash" if args.squash else "rebase" if args.rebase else "merge"
    request = WorkspaceMerge(id=0, session_id=args.id, strategy=strategy)
    print(ask(_state(args), request, CommitResult).commit)


def _discard(args: argparse.Namespace) -> None:
    ask(_state(args), WorkspaceDiscard(id=0, session_id=args.id, force=args.force), Empty)


def _state(args: argparse.Namespace) -> Path:
    return resolve_state_dir(getattr(args, "state_dir", None))
