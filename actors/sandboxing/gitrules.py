"""What git in a sandboxed checkout may write: ``git_rules(cwd, redirect=…)``.

For a worktree session (a linked worktree: its git directory is not the common one) git must
write the worktree's own admin directory (``<common>/worktrees/<name>``: index, HEAD, logs), the
object store, and its branch's ref and reflog. ``packed-refs``, ``config``, ``hooks``, the other
refs directories and the other checkouts stay read-only, so no hook can be added and no other
branch or tag created, moved or deleted. git updates a ref by creating ``<ref>.lock`` beside it
and renaming it over the ref, so the *directory* of the branch's ref must be writable (a bind of
the file alone would make the rename fail with ``EBUSY``). How each backend gets that:

* ``redirect`` (bubblewrap: it has mounts): the branch gets a directory of its own
  (``reflink.link``: its value in ``<common>/corral/<ref>/``, the ref a symlink to it), bound
  over the ref's directory (``redirects``), and likewise its reflog. git inside locks and renames
  there, the repository sees the commits through the symlink; a new ref made inside
  (``git branch corral/another``) lands in that directory and nowhere else. The refs beside the
  branch are bound read-only over it again (``protected``), so they stay visible and unchanged.
* otherwise (Landlock: no mounts) the directory of the branch's ref itself is writable; every
  other ref already in it is protected, after being written out as a loose ref if it was only
  in ``packed-refs`` (so a loose file cannot shadow it). The limits: a new ref *name* beside the
  branch can be created, and Landlock cannot hold a protected file inside a writable directory,
  so it leaves the directories on the way to one out of the grant (``landlock.split``): with
  another branch beside its own at its start, a Landlock session cannot commit.

Under ``redirect`` a branch with no commit (an unborn one) has nothing to link, and no ref
directory is made writable: git inside cannot make its first commit. docs/sandbox.md says what a
``git gc`` outside does to a redirected branch (``reflink``).

For any checkout whose git directory is inside the writable cwd (an ordinary clone), its
``hooks`` and ``config`` stay read-only.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import msgspec

from actors.sandboxing.reflink import link

__all__ = ["GitRules", "git_rules"]


class GitRules(msgspec.Struct, kw_only=True, frozen=True):
    """Paths to make writable and paths inside them to keep read-only."""

    readable: tuple[Path, ...] = ()
    """The repository's common directory: read-only, and visible even under a private ``/tmp``."""
    writable: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()
    top: Path | None = None
    """The work tree's top level (a worktree session's writable root)."""
    redirects: tuple[tuple[Path, Path], ...] = ()
    """``(source, destination)``: a directory bound writable over another (``redirect``)."""


def git_rules(cwd: str, git: str = "git", *, redirect: bool = False) -> GitRules:
    """The rules for ``cwd``; empty when it is not in a git work tree. ``redirect``: give a
    worktree's branch a directory of its own (bubblewrap). Blocking (runs git)."""
    try:
        done = subprocess.run(
            [git, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir",
             "--git-common-dir", "--symbolic-full-name", "HEAD"],
            cwd=cwd, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return GitRules()
    lines = done.stdout.decode("utf-8", "surrogateescape").splitlines()
    if done.returncode != 0 or len(lines) < 3:
        return GitRules()
    top, git_dir, common = Path(lines[0]), Path(os.path.realpath(lines[1])), Path(os.path.realpath(lines[2]))
    head = lines[3] if len(lines) > 3 else ""
    protected = [common / "hooks", common / "config"]
    if git_dir == common:
        return GitRules(protected=tuple(protected), top=top)
    writable = [git_dir, common / "objects"]
    if redirect and head.startswith("refs/heads/"):
        linked = link(common, head, git)
        if linked is None:  # no commit to hold: git inside cannot write the branch (fails closed)
            return GitRules(readable=(common,), writable=tuple(writable), protected=tuple(protected), top=top)
        protected += _beside(linked.ref) + _beside(linked.log)
        return GitRules(readable=(common,), writable=tuple(writable), protected=tuple(protected), top=top,
                        redirects=((linked.ref_dir, linked.ref.parent), (linked.log_dir, linked.log.parent)))
    if head.startswith("refs/heads/"):
        ref = common / head
        log = common / "logs" / head
        for path in (ref.parent, log.parent):
            path.mkdir(parents=True, exist_ok=True)
            writable.append(path)
        _unpack_siblings(git, top, ref.parent, common)
        protected += [entry for entry in _entries(ref.parent) if entry != ref and not entry.name.endswith(".lock")]
        protected += [entry for entry in _entries(log.parent) if entry != log]
    return GitRules(readable=(common,), writable=tuple(writable), protected=tuple(protected), top=top)


def _beside(path: Path) -> list[Path]:
    """The refs (or reflogs) beside ``path`` to bind read-only into its redirected directory:
    not git's locks, not corral's temporary names, not a link whose target is gone (there is
    nothing to bind)."""
    return [entry for entry in _entries(path.parent)
            if entry != path and not entry.name.startswith(".") and not entry.name.endswith(".lock")
            and entry.exists()]


def _entries(directory: Path) -> list[Path]:
    try:
        return sorted(Path(entry.path) for entry in os.scandir(directory))
    except OSError:
        return []


def _unpack_siblings(git: str, top: Path, directory: Path, common: Path) -> None:
    """Write every ref packed directly in ``directory`` out as a loose ref (same value), so it
    can be bound read-only in place and no loose file can shadow it."""
    packed = common / "packed-refs"
    if not packed.exists():
        return
    prefix = directory.relative_to(common).as_posix() + "/"
    for line in packed.read_text(encoding="utf-8", errors="surrogateescape").splitlines():
        if line.startswith(("#", "^")) or " " not in line:
            continue
        sha, name = line.split(" ", 1)
        if not name.startswith(prefix) or "/" in name.removeprefix(prefix):
            continue
        loose = common / name
        if not loose.exists():
            loose.write_text(sha + "\n", encoding="ascii")
