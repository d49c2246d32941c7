"""The one reader of ``/proc/<pid>/stat`` (Linux): a process's state, parent, group and start.

The command name (field 2) may hold spaces and parentheses, so the line is split after its last
``)``; what follows starts with field 3. Callers that run elsewhere than Linux use psutil.
"""

from __future__ import annotations

from typing import NamedTuple


class ProcStat(NamedTuple):
    """The fields of ``/proc/<pid>/stat`` we use."""

    state: str
    """Field 3: ``R`` running, ``S`` sleeping, ``Z`` zombie, ..."""
    ppid: int
    """Field 4: the parent's pid."""
    pgid: int
    """Field 5: the process group."""
    start_ticks: int
    """Field 22: the start time in clock ticks since boot; it never changes."""


def read_stat(pid: int) -> ProcStat:
    """The stat line of ``pid``. Raises ``OSError`` (``FileNotFoundError`` once it is gone)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        return parse_stat(f.read())


def parse_stat(line: bytes) -> ProcStat:
    """A ``/proc/<pid>/stat`` line, parsed. Raises ``ValueError`` if it is not one."""
    fields = line.rpartition(b")")[2].split()
    if len(fields) < 20:
        raise ValueError(f"not a /proc stat line: {line[:80]!r}")
    return ProcStat(fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[19]))
