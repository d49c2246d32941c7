"""The crash ledger: one row per live child, in ``<state_dir>/ledger.json``, written atomically.

A row is written before a child is handed to its user and removed when the child is reaped, so
after a daemon crash the file lists exactly the children that may still run; ``reconcile`` kills
those on the next boot (its rules are in its docstring). Each write replaces the whole file: temp
file, ``fsync``, ``rename``, ``fsync`` of the directory, so a crash leaves the old or the new file,
never a torn one. A file that does not decode anyway (a disk error, a hand edit) is set aside as
``ledger.json.corrupt-<time>-<pid>`` and reported, never trusted and never fatal.

Writes are blocking file I/O (about a millisecond with the fsyncs), so the async methods run them
in a worker thread. Concurrent writers are serialised by a ``trio.Lock`` and coalesced: a writer
that finds its change already on disk (written by the writer before it) returns at once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import time
from collections.abc import Sequence
from typing import Literal

import msgspec
import psutil
import trio

from protocol.errors import StorageFailed
from supervisor import reaper
from supervisor.atomic import atomic_write
from supervisor.identity import (
    StartToken,
    boot_id,
    read_marker,
    real_state_dir,
    same_process,
    start_token,
    started_before,
    token_of,
)
from supervisor.killing import (
    descendants_in,
    forget_signalled,
    process_table,
    signal_all,
    signal_group,
    wait_gone_blocking,
)

LEDGER_FILE = "ledger.json"
LEDGER_VERSION = 1

logger = logging.getLogger("corral.ledger")


class LedgerRow(msgspec.Struct, kw_only=True, frozen=True):
    """One live child as the ledger records it.

    ``key`` is the ledger key (unique per spawn; also the child's ``CORRAL_CHILD_KEY``), ``kind``
    what the child is (``vendor``, ``mcp``, ``lsp``, ``native``...), ``pgid`` its process group,
    ``token`` its start token, ``argv_hash`` the SHA-256 of its argv, ``started_at`` the wall-clock
    time of the spawn.
    """

    key: str
    kind: str
    pid: int
    pgid: int
    token: StartToken
    argv_hash: str
    argv: list[str]
    started_at: float


class _LedgerFile(msgspec.Struct, kw_only=True):
    version: int = LEDGER_VERSION
    rows: list[LedgerRow] = msgspec.field(default_factory=list)


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(_LedgerFile)


def argv_hash(argv: Sequence[str]) -> str:
    """The SHA-256 (hex) of an argv, unambiguous about where one argument ends."""
    return hashlib.sha256(_encoder.encode(list(argv))).hexdigest()


class Ledger:
    """The ledger of one state directory; rows already in the file are kept until reconciled.

    Construct it after ``reconcile`` on boot. Raises ``StorageFailed`` if the state directory
    cannot be created or the file cannot be read.
    """

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        os.makedirs(state_dir, mode=0o700, exist_ok=True)
        self.state_dir = real_state_dir(state_dir)
        """The canonical state directory; children carry it as ``CORRAL_STATE_DIR``."""
        self.path = os.path.join(self.state_dir, LEDGER_FILE)
        rows, self.corrupt = load(self.path)
        """Where a corrupt file found at construction was set aside, or None."""
        self._rows = {row.key: row for row in rows}
        self._lock = trio.Lock()
        self._version = 0
        self._written = 0

    def rows(self) -> list[LedgerRow]:
        """The rows as the daemon last changed them (in insertion order)."""
        return list(self._rows.values())

    def kill_all(self) -> list[int]:
        """SIGKILL the process group of every recorded child still alive; return their pids.

        For a daemon that must stop *now* (a second SIGTERM). Synchronous and non-blocking; each
        child's ``Child`` handle then sees it killed and reaps it as usual. A row whose pid now
        names another process (a different start token) is skipped.
        """
        killed = []
        for row in list(self._rows.values()):
            try:
                if not same_process(row.token, start_token(row.pid)):
                    continue
            except psutil.Error:
                continue
            if signal_group(row.pgid, signal.SIGKILL):
                killed.append(row.pid)
        return killed

    async def add(self, row: LedgerRow) -> None:
        """Record ``row`` (replacing a row with the same key) and return once it is on disk.

        Raises ``StorageFailed``. Cancellation: a write under way always completes (its thread
        is never abandoned); a caller cancelled while queued for the lock leaves its row in
        memory, to be written with the next change (``open_child`` then removes it).
        """
        self._rows[row.key] = row
        await self._flush()

    async def remove(self, key: str) -> None:
        """Drop the row ``key`` (a no-op if absent) and return once that is on disk.

        Raises ``StorageFailed``; cancellation as for ``add``.
        """
        if self._rows.pop(key, None) is not None:
            await self._flush()

    async def _flush(self) -> None:
        self._version += 1
        wanted = self._version
        async with self._lock:
            if self._written >= wanted:
                return
            version, rows = self._version, list(self._rows.values())
            await trio.to_thread.run_sync(write, self.path, rows)
            self._written = version


def load(path: str) -> tuple[list[LedgerRow], str | None]:
    """The rows in ledger file ``path`` and None, or no rows and where a bad file was set aside.

    A missing file has no rows. Raises ``StorageFailed`` only if the file exists but cannot be
    read or set aside.
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        raise StorageFailed(f"cannot read the ledger {path}: {exc.strerror}") from exc
    try:
        return _decoder.decode(data).rows, None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        aside = f"{path}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        try:
            os.replace(path, aside)
        except OSError as err:
            raise StorageFailed(f"cannot set aside the corrupt ledger {path}") from err
        logger.warning("ledger %s is corrupt (%s); set aside as %s", path, exc, aside)
        return [], aside


def write(path: str, rows: list[LedgerRow]) -> None:
    """Replace ledger file ``path`` with ``rows``, atomically and durably; or ``StorageFailed``."""
    try:
        atomic_write(path, _encoder.encode(_LedgerFile(rows=rows)))
    except OSError as exc:
        raise StorageFailed(f"cannot write the ledger {path}: {exc.strerror}") from exc


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
    dir. Spared: a process that started before the row it would belong to, a row from another
    boot, a marker naming another state dir, this process, its ancestors and its live children.
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
        if marker_dir != state or (marked_proc := table.process(pid)) is None:
            continue
        owner = by_key.get(key) if key is not None else None
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
