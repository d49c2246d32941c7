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

import msgspec
import psutil
import trio

from protocol.errors import StorageFailed
from supervisor.atomic import atomic_write
from supervisor.proc.identity import (
    StartToken,
    real_state_dir,
    same_process,
    start_token,
)
from supervisor.proc.killing import (
    signal_group,
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

    def kill_recorded(self) -> list[int]:
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
