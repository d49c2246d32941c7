"""The process table (``pid -> (ppid, pgid)``), read once for everyone who asks at the same time.

Closing a child surveys every process on the machine (``killing.Family``). When a daemon with a
thousand sessions stops, a thousand close sequences survey at once; each reading ``/proc`` for
every process on its own made the stop quadratic (200 sessions: 7–12 s, nearly all of it in
``/proc/<pid>/stat``). So a read is shared: a caller gets a table whose reading *began after it
asked*, which is all a fresh read of its own would promise, and callers that ask while a read is
under way share the next one.
"""

from __future__ import annotations

import os
import threading

import psutil

from supervisor.proc.procstat import read_stat

__all__ = ["Table", "process_table", "reads"]

Table = dict[int, tuple[int, int]]


def process_table() -> Table:
    """Every process as ``pid -> (ppid, pgid)``, read after this call began. Blocking; thread-safe.

    The table is shared with other callers: do not change it.
    """
    return _SHARED.read()


def reads() -> int:
    """How many times the table was read from the system (for tests and benchmarks)."""
    return _SHARED.done


class _Shared:
    """Single flight with generations: ``started`` reads begun, ``done`` reads finished."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = False
        self.started = 0
        self.done = 0
        self._table: Table = {}

    def read(self) -> Table:
        with self._cond:
            need = self.started + 1  # the first read that begins after now
            while self.done < need:
                if not self._running:
                    return self._read_myself()
                self._cond.wait()
            return self._table

    def _read_myself(self) -> Table:
        """Called holding the lock with no read running; reads without it, then publishes."""
        self._running = True
        self.started += 1
        generation = self.started
        self._cond.release()
        try:
            table = _read()
        finally:
            self._cond.acquire()
            self._running = False
            self._cond.notify_all()
        self._table = table
        self.done = generation
        return table


def _read() -> Table:
    if not os.path.isdir("/proc/self"):
        return _read_psutil()
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = read_stat(int(name))
        except (OSError, ValueError):
            continue
        table[int(name)] = (stat.ppid, stat.pgid)
    return table


def _read_psutil() -> Table:
    table = {}
    for proc in psutil.process_iter(["ppid"]):
        try:
            table[proc.pid] = (proc.info["ppid"], os.getpgid(proc.pid))
        except OSError:
            continue
    return table


_SHARED = _Shared()
