"""What this session has read: the read-before-write rule and stale-read detection.

A file that exists may be written or edited only if the session read it (or wrote it) and it
has not changed on disk since. "Changed" means its bytes differ from what the session saw: the
size is compared first (cheap), then the sha256 of the content. mtime is recorded for clients
and debugging but is not trusted alone, since ``touch`` changes it without changing content and
coarse filesystem clocks can miss a real change.

The records are plain data (``records()`` / ``ReadRecords(records)``) so a worker may persist
them across a restart; fresh records simply make the model read again.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable

import msgspec

from .errors import ToolError, ToolErrorCode


class ReadRecord(msgspec.Struct, frozen=True, kw_only=True):
    """The state of one file as this session last saw it (``path`` is absolute and resolved)."""

    path: str
    sha256: str
    size: int
    mtime_ns: int


def content_hash(data: bytes) -> str:
    """The sha256 hex digest used everywhere a tool names a file's content."""
    return hashlib.sha256(data).hexdigest()


class ReadRecords:
    """Thread-safe map from resolved path to the last ``ReadRecord`` of this session."""

    def __init__(self, records: Iterable[ReadRecord] = ()) -> None:
        self._lock = threading.Lock()
        self._records = {r.path: r for r in records}

    def record(self, path: str, data: bytes, stat: os.stat_result) -> ReadRecord:
        """Remember that the session has seen ``data`` as the content of ``path``."""
        entry = ReadRecord(path=path, sha256=content_hash(data), size=len(data), mtime_ns=stat.st_mtime_ns)
        with self._lock:
            self._records[path] = entry
        return entry

    def get(self, path: str) -> ReadRecord | None:
        """The last record of ``path``, if the session has seen it."""
        with self._lock:
            return self._records.get(path)

    def require(self, path: str, display: str) -> ReadRecord:
        """The record of ``path``; raises ``not_read`` when the session has not seen it."""
        seen = self.get(path)
        if seen is None:
            raise ToolError(
                ToolErrorCode.NOT_READ,
                f"{display} exists and has not been read in this session; read it before changing it.",
            )
        return seen

    @staticmethod
    def verify(seen: ReadRecord, display: str, current: bytes) -> None:
        """Raise ``stale_read`` unless ``current`` is the content ``seen`` recorded."""
        if seen.size != len(current) or seen.sha256 != content_hash(current):
            raise ToolError(
                ToolErrorCode.STALE_READ,
                f"{display} changed on disk since it was last read; read it again before changing it.",
            )

    def records(self) -> list[ReadRecord]:
        """Every record, sorted by path (for persistence)."""
        with self._lock:
            return sorted(self._records.values(), key=lambda r: r.path)
