"""A session's files as the session table opens them: at boot, every session on disk (the ones a
crashed daemon left open closed then); at a create or resume, ``meta.json`` and the event log
(blocking: run in a worker thread) and the resumed session's frame log.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from actors.session.closedsession import ClosedSession, close_after_crash
from actors.session.eventlog import EventLog
from actors.session.framelog import FrameLog, open_frame_log
from actors.session.logfile import Durability
from actors.session.meta import SessionMeta, list_sessions, write_meta
from protocol.errors import BadRequest, StorageFailed

__all__ = ["OnDisk", "load_sessions", "open_new", "reopen", "reopen_frame_log"]

log = logging.getLogger("corral.sessions")

_LEFT_OPEN = ("daemon_restarted", "daemon_stopped")
"""``closed_reason``s of sessions the user did not close: the daemon crashed or stopped under them."""


class OnDisk(NamedTuple):
    """The sessions ``load_sessions`` found: all ended now, ``revived`` the ones it closed."""

    ended: list[ClosedSession]
    revived: list[str]
    """The ids of the sessions a crashed daemon left open (closed with ``daemon_restarted``)."""
    left_open: list[str]
    """The ids of the sessions the user did not close (the daemon crashed or stopped under them):
    ``[sessions] resume_on_boot`` resumes them."""


def load_sessions(root: Path, durability: Durability) -> OnDisk:
    """Load every session under ``root``; close those a crashed daemon left open. An unreadable
    one, or one whose log is damaged, is logged and skipped. Blocking (the daemon's boot)."""
    ended: list[ClosedSession] = []
    revived: list[str] = []
    left_open: list[str] = []
    for directory, meta in list_sessions(root):
        if isinstance(meta, Exception):
            log.warning("session %s is unreadable and skipped: %s", directory.name, meta)
            continue
        try:
            event_log, report = EventLog.open(directory, meta.id, durability=durability,
                                              memory_tail=0)
        except StorageFailed as exc:
            log.warning("session %s has a damaged event log and is skipped: %s", meta.id, exc)
            continue
        if report.truncated_bytes:
            log.warning("session %s: a torn last line (%d bytes) was truncated",
                        meta.id, report.truncated_bytes)
        if meta.state not in ("closed", "failed"):
            close_after_crash(event_log)
            meta = msgspec.structs.replace(meta, state="closed", closed_reason="daemon_restarted")
            write_meta(directory, meta)
            revived.append(meta.id)
        if meta.closed_reason in _LEFT_OPEN:
            left_open.append(meta.id)
        event_log.close()  # still readable; an ended session holds no descriptor
        ended.append(ClosedSession(meta, event_log))
    return OnDisk(ended, revived, left_open)


def open_new(directory: Path, meta: SessionMeta, **settings: Any) -> EventLog:
    """Write a new session's ``meta.json`` and create its log (blocking: run it in a thread)."""
    write_meta(directory, meta)
    event_log, _ = EventLog.open(directory, meta.id, **settings)
    return event_log


def reopen(directory: Path, meta: SessionMeta, **settings: Any) -> EventLog:
    """Write a resumed session's ``meta.json`` and reopen its log (blocking: run it in a thread)."""
    event_log, _ = EventLog.open(directory, meta.id, **settings)
    write_meta(directory, meta)
    return event_log


def reopen_frame_log(raw: object, cwd: str, state_dir: Path, session_dir: Path) -> FrameLog | None:
    """The frame log of a resumed session: a new file where the old one is gone. An existing file
    is never taken over (it may not be ours any more), so the resumed session then has none."""
    try:
        return open_frame_log(raw, cwd=cwd, state_dir=state_dir, session_dir=session_dir)
    except BadRequest as exc:
        log.warning("session %s: options.log_path not reopened: %s", session_dir.name, exc.message)
        return None
