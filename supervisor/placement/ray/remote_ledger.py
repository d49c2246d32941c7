"""The crash ledger of remote children: ``placement-ledger.json`` in the state directory.

One row per running remote child, on disk before the session gets the child and dropped once it
is closed: ``(session_id, epoch, node_id, node_ip, agent_pid, pid, start token, boot id)``. The
local ledger (``supervisor.ledger``) does not hold them: its boot reconcile kills pids of *this*
machine, and a remote child's pid names a process on its node. A daemon that boots hands these
rows to its gateway's reconcile (``client.RayPlacement``), which asks every live agent for its
children and kills those no session runs now, then clears the file. Writes are atomic.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import trio

from supervisor.atomic import atomic_write

__all__ = ["REMOTE_LEDGER_FILE", "RemoteLedger", "RemoteRow"]

REMOTE_LEDGER_FILE = "placement-ledger.json"


class RemoteRow(msgspec.Struct, kw_only=True, frozen=True):
    """One remote child: which incarnation of which session, where, and its identity there."""

    key: str
    session_id: str
    epoch: int
    node_id: str
    node_ip: str
    agent_pid: int
    pid: int
    create_time: float
    start_ticks: int | None = None
    boot_id: str = ""


_decoder = msgspec.json.Decoder(list[RemoteRow])
_encoder = msgspec.json.Encoder()


class RemoteLedger:
    """The rows of one state directory; no I/O until the first call."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.path = Path(state_dir) / REMOTE_LEDGER_FILE
        self._rows: dict[str, RemoteRow] = {}
        self._lock = trio.Lock()

    def load(self) -> list[RemoteRow]:
        """The rows a previous daemon left (blocking; an unreadable file counts as none)."""
        try:
            return _decoder.decode(self.path.read_bytes())
        except (OSError, msgspec.DecodeError):
            return []

    def rows(self) -> list[RemoteRow]:
        return list(self._rows.values())

    async def add(self, row: RemoteRow) -> None:
        self._rows[row.key] = row
        await self._write()

    async def forget(self, key: str) -> None:
        if self._rows.pop(key, None) is not None:
            await self._write()

    async def clear(self) -> None:
        self._rows.clear()
        await self._write()

    async def _write(self) -> None:
        async with self._lock:
            data = _encoder.encode(list(self._rows.values()))
            await trio.to_thread.run_sync(atomic_write, self.path, data)
