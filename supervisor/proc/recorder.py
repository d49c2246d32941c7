"""What a process child needs of the crash ledger, as a ``Protocol`` (``supervisor.ledger.Ledger``
implements it), so that ``proc`` does not import ``ledger``: the ledger builds on ``proc``
(identity, killing) and not the other way round.

A child is recorded after the fork and before its handle is handed over, and forgotten once it
is reaped; the recorder's state directory goes into the child's environment marker, so that the
next boot can tell our children from strangers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["SpawnRecorder"]


class SpawnRecorder(Protocol):
    """Records the children that may still run, durably, so that a crashed daemon's are found."""

    @property
    def state_dir(self) -> str:
        """The canonical state directory; children carry it as ``CORRAL_STATE_DIR``."""
        ...

    async def record(self, key: str, *, kind: str, pid: int, pgid: int, argv: Sequence[str],
                     started_at: float) -> None:
        """Record the child spawned as ``key`` (unique per spawn) and return once it is durable.

        Raises ``StorageFailed``. Not cancellable (the write is short and never abandoned).
        """
        ...

    async def forget(self, key: str) -> None:
        """Drop the record ``key`` (a no-op if absent): its child was reaped.

        Raises ``StorageFailed``. Not cancellable: a record must not outlive its process
        because the caller was cancelled.
        """
        ...
