"""Durable replacement of a small file: the old content or the new, never a torn mix."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def atomic_write(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o600,
                 durable: bool = True) -> None:
    """Replace ``path`` with ``data``: temporary file (``mode``), fsync, rename, fsync of the directory.

    Blocking (two fsyncs). Raises ``OSError``; the old file is then intact and no temporary
    file is left behind. ``durable=False`` skips both fsyncs: every process sees the old file or
    the new one all the same, and a crash of the writing process loses nothing (the kernel
    keeps the write); only a crash of the machine may, for a file that guards nothing then.
    """
    target = Path(path)
    # A fixed name: one daemon owns the directory and serialises its writes, and a crash
    # leaves at most one stale temporary, which the next write replaces.
    temporary = target.with_name(f".{target.name}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    if durable:
        fsync_directory(target.parent)


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a rename or creation in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
