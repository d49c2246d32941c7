"""The crash ledger: one row per live child, in ``<state_dir>/ledger.json``, written atomically.

A row is written before a child is handed to its user and removed when the child is reaped, so
after a daemon crash the file lists exactly the children that may still run; ``reconcile`` kills
those on the next boot (its rules are in its docstring). Each write replaces the whole file
(temp file, ``rename``), so every reader sees the old file or the new one, never a torn mix.

**No fsync.** The ledger guards against the daemon *process* dying, and a process that dies
loses none of its writes: the kernel keeps them. A crash of the machine may lose the last ones,
but it also ends every child the ledger could name (and ``reconcile`` checks each row's start
token, so a stale row never kills a stranger). Two fsyncs per spawn and per reap would buy
nothing and cost a millisecond or more on every terminal an agent opens. A file that does not
decode (a disk error, a hand edit, a machine crash mid-write) is set aside as
``ledger.json.corrupt-<time>-<pid>.<n>`` and reported, never trusted and never fatal.

A ``Ledger`` holds the rows of this process's children. Rows it finds in the file that another
process wrote (a crashed daemon's, not yet reconciled) are *inherited*: they are written back with
every change, so they survive until ``reconcile`` handles them, and are dropped as soon as the
file no longer holds them (``reconcile`` empties it); ``rows()`` never reports them. This keeps
the ledger right whichever of the ``Ledger`` and ``reconcile`` comes first on boot.

The file work (reading it once, creating the directory, writing: without fsyncs a fraction of
a millisecond, like an event log's append) runs in the caller's thread, not a worker thread: a
hop to a thread and back costs more than that on a busy machine, and a spawn waits for it. The
constructor does none. Writers are coalesced: each change yields once first, and a writer that
finds its change already on disk (written by one before it) returns at once; a write that
failed is retried by the next one.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import time
from collections.abc import Sequence

import msgspec
import trio

from protocol.errors import StorageFailed
from supervisor.atomic import atomic_write
from supervisor.proc.identity import StartToken, real_state_dir, start_token
from supervisor.proc.killing import kill_now

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


_ASIDE = itertools.count(1)
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(_LedgerFile)


def argv_hash(argv: Sequence[str]) -> str:
    """The SHA-256 (hex) of an argv, unambiguous about where one argument ends."""
    return hashlib.sha256(_encoder.encode(list(argv))).hexdigest()


class Ledger:
    """The ledger of one state directory, as seen by the process whose children it records;
    the ``SpawnRecorder`` (``supervisor.proc.recorder``) that ``open_child`` is given.

    The directory is created (mode 0700) and the file read at the first write, in a worker
    thread; constructing a ``Ledger`` does no I/O.
    """

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.state_dir = real_state_dir(state_dir)
        """The canonical state directory; children carry it as ``CORRAL_STATE_DIR``."""
        self.path = os.path.join(self.state_dir, LEDGER_FILE)
        self._rows: dict[str, LedgerRow] = {}
        self._inherited: dict[str, LedgerRow] | None = None  # None: the file was not read yet
        self._version = 0
        self._written = 0

    def rows(self) -> list[LedgerRow]:
        """This process's children as the ledger records them (in insertion order)."""
        return list(self._rows.values())

    def kill_recorded(self) -> list[int]:
        """SIGKILL every recorded child still alive with its whole family; return their pids.

        For a daemon that must stop *now* (a second SIGTERM). Each row's leader is checked
        against its start token first, and everything is signalled through that check: a row
        whose pid names another process now is skipped, and no bare group id is signalled unless
        its leader is our unreaped child (``supervisor.proc.killing.kill_now``). Blocking (it
        reads ``/proc``): call it from a worker thread. Each child's ``ProcessChild`` then sees
        it killed, reaps it and drops its row as usual.
        """
        return [row.pid for row in tuple(self._rows.values())
                if kill_now(row.pid, row.token, row.key)]

    async def add(self, row: LedgerRow) -> None:
        """Record ``row`` (replacing a row with the same key) and return once it is on disk.

        Raises ``StorageFailed``. Not cancellable (the write is short and never abandoned).
        """
        self._rows[row.key] = row
        self._version += 1
        await self._sync()

    async def record(self, key: str, *, kind: str, pid: int, pgid: int, argv: Sequence[str],
                     started_at: float) -> None:
        """Record a child just spawned (``supervisor.proc.recorder.SpawnRecorder``): its row,
        with the start token of ``pid`` read now, is on disk when this returns.

        Raises ``StorageFailed``. Not cancellable.
        """
        await self.add(LedgerRow(key=key, kind=kind, pid=pid, pgid=pgid, token=start_token(pid),
                                 argv_hash=argv_hash(argv), argv=list(argv), started_at=started_at))

    async def forget(self, key: str) -> None:
        """Drop the row ``key`` (a no-op if absent) and return once the file agrees.

        Raises ``StorageFailed``. Not cancellable: a row must not outlive its process because
        the caller was cancelled. A removal whose write failed is written by the next ``add`` or
        ``forget``.
        """
        if self._rows.pop(key, None) is not None:
            self._version += 1
        await self._sync()

    async def _sync(self) -> None:
        await trio.lowlevel.cancel_shielded_checkpoint()  # changes made meanwhile join this write
        if self._written >= self._version:
            return
        version, rows = self._version, list(self._rows.values())
        self._inherited = _write_with_inherited(self.path, rows, self._inherited)
        self._written = version


def _write_with_inherited(
    path: str, rows: list[LedgerRow], inherited: dict[str, LedgerRow] | None
) -> dict[str, LedgerRow]:
    """Write ``rows`` after the inherited rows still in the file; return those (see the header)."""
    if inherited is None or inherited:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        on_disk = {row.key: row for row in load(path)[0]}
        if inherited is None:
            ours = {row.key for row in rows}
            inherited = {key: row for key, row in on_disk.items() if key not in ours}
        else:
            inherited = {key: row for key, row in inherited.items() if key in on_disk}
    write(path, [*inherited.values(), *rows])
    return inherited


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
        # The sequence number keeps two set-asides in one second apart.
        aside = f"{path}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.{next(_ASIDE)}"
        try:
            os.replace(path, aside)
        except OSError as err:
            raise StorageFailed(f"cannot set aside the corrupt ledger {path}") from err
        logger.warning("ledger %s is corrupt (%s); set aside as %s", path, exc, aside)
        return [], aside


def write(path: str, rows: list[LedgerRow]) -> None:
    """Replace ledger file ``path`` with ``rows``, atomically; or ``StorageFailed``. Not fsynced:
    see the module docstring."""
    try:
        atomic_write(path, _encoder.encode(_LedgerFile(rows=rows)), durable=False)
    except OSError as exc:
        raise StorageFailed(f"cannot write the ledger {path}: {exc.strerror}") from exc
