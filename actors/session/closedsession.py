"""Sessions that ended: read-only, still subscribable; and the close of those a crash left open.

An ended session's log is closed (it holds no descriptor). ``ClosedSession.append`` reopens it
for one event from outside (a ``workspace`` change after the session ended: merged, discarded),
so subscribers of an ended session see it too. The caller (``SessionTable.announce``) holds the
session's lock, which ``resume`` holds as well: the log never has two writers.
"""

from __future__ import annotations

import time
from pathlib import Path

import trio

from actors.session.eventlog import EventLog
from actors.session.logfile import Durability
from actors.session.feed import Feed
from actors.session.meta import SessionMeta
from protocol import events as ev
from protocol.models import SessionInfo

__all__ = ["ClosedSession", "close_after_crash"]


class ClosedSession:
    """A session that ended (in this run or an earlier one): read-only, still subscribable."""

    def __init__(self, meta: SessionMeta, log: EventLog, feed: Feed | None = None) -> None:
        self.meta = meta
        self.log = log
        self.feed = feed if feed is not None else Feed(log)

    @property
    def id(self) -> str:
        return self.meta.id

    def info(self) -> SessionInfo:
        meta = self.meta
        return SessionInfo(
            id=meta.id, name=meta.name, harness=meta.harness, cwd=meta.cwd, model=meta.model,
            state=meta.state, created_at=meta.created_at, last_seq=self.log.last_seq,
            restarts=meta.restarts, pid=None, vendor_session_id=meta.vendor_session_id,
            permissions=meta.permissions.mode, sandbox=meta.sandbox)

    async def append(self, directory: Path, event: ev.Event, *, durability: Durability) -> None:
        """Append ``event`` to the log in ``directory`` (reopened in a worker thread, synced as
        ``durability`` asks, closed again), then wake the subscribers. ``StorageFailed`` if the
        log cannot take it."""

        def append() -> EventLog:
            event_log, _ = EventLog.open(directory, self.id, durability=durability, memory_tail=0)
            try:
                event_log.append(event, now=time.time())
            finally:
                event_log.close()
            return event_log

        self.log = await trio.to_thread.run_sync(append)
        self.feed.rebind(self.log)


def close_after_crash(event_log: EventLog) -> None:
    """Close a session a crashed daemon left open: cancel its open permissions, ``exit``, ``closed``."""
    open_permissions: dict[str, None] = {}
    for frame in event_log.frames_from(1):
        match frame.event:
            case ev.Permission(permission_id=pid):
                open_permissions[pid] = None
            case ev.PermissionDecided(permission_id=pid):
                open_permissions.pop(pid, None)
    now = time.time()
    for pid in open_permissions:
        event_log.append(ev.PermissionDecided(permission_id=pid, decision="cancelled", by="session",
                                              by_name="session"), now=now)
    event_log.append(ev.Exit(reason="daemon_restarted"), now=now)
    event_log.append(ev.Status(state="closed", stalled=False), now=now)
    event_log.sync()
