"""The boot-time reconcile: kill what a crashed daemon left running, then empty the ledger."""

from __future__ import annotations

import os
import signal
from typing import Literal

import msgspec
import psutil

from supervisor.proc import reaper
from supervisor.proc.identity import (
    boot_id,
    read_marker,
    real_state_dir,
    same_process,
    started_before,
    token_of,
)
from supervisor.proc.killing import (
    descendants_in,
    forget_signalled,
    signal_all,
    signal_group,
    wait_gone_blocking,
)
from supervisor.proc.proctable import process_table
from supervisor.ledger.store import LEDGER_FILE, LedgerRow, load, write

class KilledProcess(msgspec.Struct, kw_only=True, frozen=True):
    """A process ``reconcile`` killed: which row it belonged to (if any) and why it was chosen.

    ``role``: ``leader`` (the recorded child itself), ``group`` (a member of its process group),
    ``descendant`` (a descendant that left the group), ``marker`` (found by its environment
    marker only). ``argv`` is the command line read before the kill (empty if unreadable).
    """

    pid: int
    key: str | None
    role: Literal["leader", "group", "descendant", "marker"]
    argv: list[str]


class ReconcileReport(msgspec.Struct, kw_only=True, frozen=True):
    """What ``reconcile`` did: ``killed`` processes, ``stale`` rows (leader gone, pid reused, or
    another boot), ``corrupt`` (where an unreadable ledger was set aside) and ``survivors`` (pids
    still alive after SIGKILL and the grace time; normally empty)."""

    killed: list[KilledProcess]
    stale: list[LedgerRow]
    corrupt: str | None
    survivors: list[int]


def reconcile(state_dir: str | os.PathLike[str], *, grace: float = 2.0) -> ReconcileReport:
    """Kill what a crashed daemon left running, report it, and drop every ledger row.

    Run it on boot, before anything is spawned or swept. Blocking (it waits up to ``grace``
    seconds after SIGTERM and again after SIGKILL): call it from a worker thread in async code.

    Killed: a row's leader whose pid is alive with the same start token, with its process group
    and descendants; the surviving members of a recorded group whose leader died (while the
    group exists, no new process can own its id); any process whose marker names this state
    dir and a child key (a state dir alone is what a user's shell may export). Spared: a process
    that started before the row it would belong to, a row from another boot, a marker naming
    another state dir, this process, its ancestors and its live children.
    A corrupt ledger is set aside and reported, and the marker scan still runs. Raises
    ``StorageFailed`` if the emptied ledger cannot be written.
    """
    state = real_state_dir(state_dir)
    path = os.path.join(state, LEDGER_FILE)
    rows, corrupt = load(path)
    table = _ProcessTable()
    boot = boot_id()
    targets: dict[int, tuple[psutil.Process, KilledProcess]] = {}

    def take(proc: psutil.Process, key: str | None, role: _Role, row: LedgerRow | None) -> None:
        if proc.pid in table.spared or proc.pid in targets:
            return
        try:
            if row is not None and started_before(token_of(proc), row.token):
                return
            argv = proc.cmdline()
        except psutil.Error:
            return
        targets[proc.pid] = (proc, KilledProcess(pid=proc.pid, key=key, role=role, argv=argv))

    stale, groups = [], []
    for row in rows:
        if row.token.boot_id != boot:
            stale.append(row)
            continue
        leader = table.process(row.pid)
        recorded = leader is not None and _is_recorded(leader, row)
        alive = leader is not None and recorded and _running(leader)
        # A pid that names another process now leads its own group under the same id.
        if alive or recorded or table.process(row.pgid) is None:
            for proc in table.group(row.pgid):
                take(proc, row.key, "leader" if proc is leader else "group", row)
        if leader is not None and alive:
            groups.append(row.pgid)
            take(leader, row.key, "leader", None)
            for proc in table.descendants(row.pid):
                take(proc, row.key, "descendant", row)
        else:
            stale.append(row)
    by_key = {row.key: row for row in rows}
    for pid in table.pids:
        marker_dir, key = read_marker(pid)
        # Both halves: a shell that exported CORRAL_STATE_DIR (the README's way to pick a state
        # dir) marks everything the user starts from it, and none of that is ours.
        if marker_dir != state or not key or (marked_proc := table.process(pid)) is None:
            continue
        owner = by_key.get(key)
        if owner is None or owner.token.boot_id == boot:
            take(marked_proc, key, "marker", owner)
    survivors = _terminate([proc for proc, _ in targets.values()], groups, grace)
    forget_signalled(groups)
    if os.path.isdir(state):
        write(path, [])
    return ReconcileReport(
        killed=[killed for _, killed in targets.values()],
        stale=stale,
        corrupt=corrupt,
        survivors=[proc.pid for proc in survivors],
    )


_Role = Literal["leader", "group", "descendant", "marker"]


def _is_recorded(proc: psutil.Process, row: LedgerRow) -> bool:
    try:
        return same_process(row.token, token_of(proc))
    except psutil.Error:
        return False


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _terminate(
    procs: list[psutil.Process], groups: list[int], grace: float
) -> list[psutil.Process]:
    # Group signals are safe here: each group's leader was alive a moment ago, pinning its id.
    for pgid in groups:
        signal_group(pgid, signal.SIGTERM)
    signal_all(procs, signal.SIGTERM)
    survivors = wait_gone_blocking(procs, grace)
    if not survivors:
        return []
    signal_all(survivors, signal.SIGKILL)
    return wait_gone_blocking(survivors, grace)


class _ProcessTable:
    """One snapshot of every process (parent and group), read once for all rows."""

    def __init__(self) -> None:
        me = psutil.Process()
        self.spared = {me.pid} | {p.pid for p in me.parents()} | set(reaper.live_pids())
        self._table = process_table()
        self.pids = sorted(self._table)
        self._groups: dict[int, list[int]] = {}
        for pid, (_, pgid) in self._table.items():
            self._groups.setdefault(pgid, []).append(pid)
        self._procs: dict[int, psutil.Process | None] = {}

    def process(self, pid: int) -> psutil.Process | None:
        """A psutil handle for ``pid`` if it was in the snapshot and still exists."""
        if pid not in self._table:
            return None
        if pid not in self._procs:
            try:
                self._procs[pid] = psutil.Process(pid)
            except psutil.Error:
                self._procs[pid] = None
        return self._procs[pid]

    def group(self, pgid: int) -> list[psutil.Process]:
        return [p for pid in self._groups.get(pgid, []) if (p := self.process(pid)) is not None]

    def descendants(self, pid: int) -> list[psutil.Process]:
        found = descendants_in(self._table, pid)
        return [p for child in sorted(found) if (p := self.process(child)) is not None]
