"""A sandboxed worktree's branch in a directory of its own: ``link``, ``detach``, ``relink``,
``unlink``.

git updates a ref by creating ``<ref>.lock`` beside it and renaming it over the ref, so the
sandbox of a worktree session must let git write the *directory* of its branch's ref — and with
it any new ref name there (``git branch corral/another``). Under bubblewrap the branch gets a
directory of its own instead, and its user-visible name stays:

* ``link`` moves the branch's value to ``P/<leaf>`` with ``P = <common>/corral/<ref>/`` (``ref``
  is ``refs/heads/…``, ``leaf`` its last part), and its reflog to ``PL/<leaf>`` with
  ``PL = <common>/corral/logs/<ref>/`` (made empty if there was none, so git never has to make
  it), and leaves at the ref and the reflog relative symlinks to them. git's files backend reads
  a loose ref that is a symlink to a path that is no ref name by following it
  (``files_read_raw_ref``), and appends to a reflog through its symlink: outside the sandbox,
  every git command reads and logs the branch as before. ``gitrules`` binds ``P`` over the ref's
  directory and ``PL`` over the reflog's inside the sandbox: git locks and renames in ``P``, the
  repository sees each commit through the symlink, and a ref made in there is seen by no one
  outside. ``P`` lives in the repository (not in corral's state, not in git's admin directory of
  the worktree, which ``git worktree prune`` deletes): it moves and is copied with the repository,
  and the relative symlink stays right.
* git *outside* writes the ref by renaming a new file over the symlink (a commit on the branch,
  ``update-ref``, ``reset``; corral's own ``workspace.commit`` and ``merge`` ``detach`` the ref
  first, so their reflog append cannot follow a symlink planted in ``PL``), and
  ``pack-refs --all`` (``git gc``) deletes it, taking the emptied directory with it and so the
  sandbox's bind (its git then cannot move the branch). ``relink``, after corral's own writes,
  puts the link back with the repository's value; ``link`` (every sandboxed spawn) does too:
  a plain ref's value wins (someone moved the branch outside), a packed one's only if ``P``
  has not moved on from it (a descendant: commits made inside after a ``pack-refs``).
* ``unlink`` (when corral removes the worktree, and at the daemon's start, when no sandbox of it
  can run) makes the ref and reflog plain files again with ``P``'s and ``PL``'s contents — only
  where they still point there: one replaced from outside is left as it is — and deletes ``P``
  and ``PL``.

``P`` and ``PL`` are writable inside the sandbox, so nothing here follows a symlink found in
them (one there is dropped), and ``link`` clears the empty files and directories bubblewrap left
there as mount points for the refs bound read-only beside the branch. All blocking (file
system; ``link`` runs git when the ref is not a plain file): run them in a worker thread.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import msgspec

__all__ = ["Linked", "detach", "link", "relink", "unlink"]

log = logging.getLogger("corral.sandbox")

_TMP = ".corral-tmp"


class Linked(msgspec.Struct, kw_only=True, frozen=True):
    """A linked branch: its value's directory ``ref_dir`` (``P``), to bind over ``ref.parent``,
    and its reflog's ``log_dir`` (``PL``), to bind over ``log.parent``."""

    ref: Path
    log: Path
    ref_dir: Path
    log_dir: Path


def link(common: Path, ref: str, git: str = "git") -> Linked | None:
    """Link ``ref`` (``refs/heads/…``) of the repository whose common directory is ``common``;
    None when it has no commit to hold (an unborn branch), which keeps git's own layout."""
    place = _place(common, ref)
    for planted in (place.ref_dir / place.ref.name, place.log_dir / place.log.name):
        if planted.is_symlink():  # made inside the sandbox: never followed by corral
            planted.unlink()
        elif planted.is_dir():  # likewise: no ref, and nothing could be renamed over it
            shutil.rmtree(planted)
    value = _value(common, ref, place, git)
    if value is None:
        return None
    place.ref_dir.mkdir(parents=True, exist_ok=True)
    _clear_placeholders(place.ref_dir, keep=place.ref.name)
    target = place.ref_dir / place.ref.name
    if _read(target) != value:
        _write(target, value)
    _link_log(place)
    _symlink(place.ref, target)
    return place


def detach(common: Path, ref: str) -> None:
    """Before corral itself writes ``ref`` outside the sandbox: the ref and reflog become plain
    copies of ``P``'s and ``PL``'s (which stay, bound in the session's sandbox), so git's write
    and its reflog append never follow a symlink the session may have planted in ``PL``;
    ``relink`` afterwards moves them back in."""
    place = _place(common, ref)
    target = place.ref_dir / place.ref.name
    held = _read(target)
    if held is not None and _points_at(place.ref, target):
        _write(place.ref, held)
    _plain_log(place)


def relink(common: Path, ref: str) -> None:
    """After a write outside the sandbox (corral's ``workspace.commit``, a merge): if ``ref`` is
    linked but git replaced its symlink by a plain ref, the plain ref's value goes to ``P`` and
    the symlink back. Nothing for a branch that was never linked."""
    place = _place(common, ref)
    target = place.ref_dir / place.ref.name
    if not target.exists() or place.ref.is_symlink():
        return
    value = _read(place.ref)
    if value is None:  # deleted or only packed: the next spawn's ``link`` resolves it
        return
    _write(target, value)
    _link_log(place)
    _symlink(place.ref, target)


def unlink(common: Path, ref: str) -> None:
    """Make ``ref`` and its reflog plain files again where they still point into ``P`` and
    ``PL``, then delete those. A ref replaced from outside keeps its value (logged, with
    ``P``'s, when they differ)."""
    place = _place(common, ref)
    target = place.ref_dir / place.ref.name
    held = _read(target)
    if _points_at(place.ref, target):
        if held is not None:
            _write(place.ref, held)
        else:  # deleted inside: the branch is gone
            place.ref.unlink()
    elif held is not None and _read(place.ref) != held:
        log.warning("the branch %s of %s was rewritten outside corral's link; its sandboxed value "
                    "%s is left to git's reflog and objects", ref, common, held)
    _plain_log(place)
    for directory in (place.ref_dir, place.log_dir):
        shutil.rmtree(directory, ignore_errors=True)
        _prune_empty(directory.parent, common / "corral")


def _plain_log(place: Linked) -> None:
    """Make the reflog a plain copy of ``PL``'s where it still points there (gone if that is)."""
    log_target = place.log_dir / place.log.name
    if _points_at(place.log, log_target):
        if _regular(log_target):
            _copy(log_target, place.log)
        else:
            place.log.unlink()


def _place(common: Path, ref: str) -> Linked:
    if not ref.startswith("refs/heads/") or ".." in ref.split("/"):
        raise ValueError(f"not a branch ref: {ref!r}")
    return Linked(ref=common / ref, log=common / "logs" / ref, ref_dir=common / "corral" / ref,
                  log_dir=common / "corral" / "logs" / ref)


def _value(common: Path, ref: str, place: Linked, git: str) -> str | None:
    """The value to link: ``P``'s while the link is in place; a plain ref's (git wrote it
    outside: that write wins); with neither (``pack-refs`` deleted the link) the packed value,
    unless ``P`` has moved on from it (a descendant: commits made inside after the pack);
    None for a branch that is gone or unborn."""
    target = place.ref_dir / place.ref.name
    held = _read(target)
    if held is not None and _points_at(place.ref, target):
        return held
    loose = _read(place.ref)
    if loose is not None and all(c in "0123456789abcdef" for c in loose):
        return loose  # a plain ref: no git to run (a first spawn's case)
    found = _git(common, git, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found is None or os.path.lexists(place.ref) or held is None or held == found:
        return found
    moved_on = _git(common, git, "merge-base", "--is-ancestor", found, held) is not None
    return held if moved_on else found


def _link_log(place: Linked) -> None:
    """The reflog into ``PL`` (kept if it is linked already; made empty if there is none)."""
    target = place.log_dir / place.log.name
    if _points_at(place.log, target) and _regular(target):
        return
    place.log_dir.mkdir(parents=True, exist_ok=True)
    _clear_placeholders(place.log_dir, keep=place.log.name)
    if _regular(place.log):
        os.replace(place.log, target)  # one file system: the repository's
    elif not _regular(target):
        _replace(target, b"")
    _symlink(place.log, target)


def _clear_placeholders(directory: Path, *, keep: str) -> None:
    """Delete the empty files and directories in ``directory`` but ``keep``: the mount points
    bubblewrap made there for the refs bound read-only beside the branch (``gitrules``), which
    would read as broken refs once their ref is gone."""
    for root, dirs, files in os.walk(directory, topdown=False):
        for name in files:
            path = Path(root, name)
            if (Path(root) != directory or name != keep) and _regular(path) and path.lstat().st_size == 0:
                path.unlink()
        for name in dirs:
            try:
                Path(root, name).rmdir()
            except OSError:
                pass


def _symlink(path: Path, target: Path) -> None:
    """``path`` becomes a relative symlink to ``target``, replacing what is there atomically."""
    if _points_at(path, target):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}{_TMP}")  # a name git skips (a leading dot)
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(os.path.relpath(target, path.parent))
    os.replace(temporary, path)


def _points_at(path: Path, target: Path) -> bool:
    try:
        return os.path.normpath(os.path.join(path.parent, os.readlink(path))) == os.path.normpath(target)
    except OSError:
        return False


def _regular(path: Path) -> bool:
    return not path.is_symlink() and path.is_file()


def _read(path: Path) -> str | None:
    """A ref file's value; None for none, an empty one or a symlink (never followed: inside the
    sandbox, ``P`` is writable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        text = handle.read(4096).decode("ascii", "replace").strip()
    return text or None


def _write(path: Path, value: str) -> None:
    """``value`` as a ref file at ``path``, atomically (over a symlink too, not through it)."""
    _replace(path, value.encode("ascii") + b"\n")


def _copy(source: Path, path: Path) -> None:
    """``source`` (a regular file, never a symlink's target) copied to ``path``, atomically."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        # Streamed, not read whole: inside the sandbox the session may have grown it to any size.
        _replace(path, lambda out: shutil.copyfileobj(handle, out))


def _replace(path: Path, data: bytes | Callable[[BinaryIO], object]) -> None:
    """``data`` (or what ``data(file)`` writes) in a new file renamed over ``path``. The
    temporary file is made afresh (``O_EXCL``, ``O_NOFOLLOW``): in ``P`` a symlink planted
    under its name is never written through."""
    temporary = path.with_name(f".{path.name}{_TMP}")
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as handle:
        if isinstance(data, bytes):
            handle.write(data)
        else:
            data(handle)
    os.replace(temporary, path)


def _prune_empty(directory: Path, top: Path) -> None:
    """Remove ``directory`` and its parents up to ``top`` (included) while they are empty."""
    while directory == top or top in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def _git(common: Path, git: str, *args: str) -> str | None:
    """git's output in ``common``, or None when it fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        done = subprocess.run([git, f"--git-dir={common}", *args], capture_output=True, env=env,
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.decode("ascii", "replace").strip() if done.returncode == 0 else None
