"""The durable ADK session store: one JSONL file per native session, appended and fsynced.

``JsonlSessionService`` is an ADK ``BaseSessionService`` over a directory (``sessions/<id>/native/``
in the daemon's state dir). A session is the file ``<session id>.jsonl``:

* line 1, ``{"type": "session", "id", "app_name", "user_id", "state", "created"}``;
* then one ``{"type": "event", "event": {…}}`` per non-partial ADK event, in order (the event as
  ADK's own JSON, camelCase, ``None`` fields left out).

Writes go straight to the file descriptor (one ``write`` per line, no user-space buffer) and
reach the disk on ``flush`` (``fsync``), which the worker awaits before it reports a turn's
``result``: a turn's events are on disk before anyone hears it ended. Creation fsyncs the file
and its directory at once. ``temp:`` state is never written: ADK trims it from each event's
state delta (after applying it to the live session) and it is dropped from the initial state.

Loading replays the events onto the header's state. A last line cut short by a crash (no
newline, or not valid JSON) is a torn write: it is dropped and the file truncated to the last
whole line, with a warning. Any other unreadable line is corruption: ``StoreCorrupt``.

One worker owns one session, so the service keeps the sessions it loaded in memory and hands
the runner light copies (events list and state copied), as ADK's in-memory service does.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import secrets
import time
from pathlib import Path
from typing import Any

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

__all__ = ["JsonlSessionService", "StoreCorrupt", "new_session_id"]

log = logging.getLogger("corral.native.store")


class StoreCorrupt(Exception):
    """A session file has an unreadable line before its last one (not a torn write)."""


def new_session_id() -> str:
    """A fresh native session id."""
    return f"n-{secrets.token_hex(8)}"


class JsonlSessionService(BaseSessionService):
    """See the module docstring."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._sessions: dict[str, Session] = {}
        self._fds: dict[str, int] = {}
        self.truncated_bytes = 0
        """Bytes of a torn last line dropped by the last load (0 if there was none)."""

    def path(self, session_id: str) -> Path:
        """The file of session ``session_id``."""
        if not session_id or "/" in session_id or session_id.startswith("."):
            raise ValueError(f"bad native session id {session_id!r}")
        return self.directory / f"{session_id}.jsonl"

    async def create_session(self, *, app_name: str, user_id: str,
                             state: dict[str, Any] | None = None,
                             session_id: str | None = None) -> Session:
        """A new session, its header line written and fsynced (with its directory)."""
        session_id = (session_id or "").strip() or new_session_id()
        path = self.path(session_id)
        if session_id in self._sessions or path.exists():
            raise AlreadyExistsError(f"native session {session_id} already exists")
        kept = {k: v for k, v in (state or {}).items() if not k.startswith(State.TEMP_PREFIX)}
        now = time.time()
        header = {"type": "session", "id": session_id, "app_name": app_name,
                  "user_id": user_id, "state": kept, "created": now}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC,
                     0o600)
        self._fds[session_id] = fd
        _write_all(fd, json.dumps(header, ensure_ascii=False).encode() + b"\n")
        os.fsync(fd)
        _fsync_dir(self.directory)
        session = Session(id=session_id, app_name=app_name, user_id=user_id,
                          state=dict(kept), last_update_time=now)
        self._sessions[session_id] = session
        return _light_copy(session)

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: GetSessionConfig | None = None) -> Session | None:
        """The session (loaded from its file the first time), or ``None`` if there is none."""
        session = self._sessions.get(session_id)
        if session is None:
            if not self.path(session_id).exists():
                return None
            session = self._load(session_id)
        if session.app_name != app_name or session.user_id != user_id:
            return None
        copied = _light_copy(session)
        if config is not None:
            events = copied.events
            if config.num_recent_events is not None:
                events = events[-config.num_recent_events:] if config.num_recent_events else []
            if config.after_timestamp is not None:
                events = [e for e in events if e.timestamp >= config.after_timestamp]
            copied.events = events
        return copied

    async def list_sessions(self, *, app_name: str,
                            user_id: str | None = None) -> ListSessionsResponse:
        """Every session file's header in the directory (events left out)."""
        found: list[Session] = []
        for path in sorted(self.directory.glob("*.jsonl")):
            header = _header(path)
            if header is None or header.get("app_name") != app_name:
                continue
            if user_id is not None and header.get("user_id") != user_id:
                continue
            found.append(Session(id=str(header["id"]), app_name=app_name,
                                 user_id=str(header.get("user_id")),
                                 state=dict(header.get("state") or {}),
                                 last_update_time=path.stat().st_mtime))
        return ListSessionsResponse(sessions=sorted(found, key=lambda s: s.last_update_time))

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Remove the session and its file."""
        self._sessions.pop(session_id, None)
        fd = self._fds.pop(session_id, None)
        if fd is not None:
            os.close(fd)
        self.path(session_id).unlink(missing_ok=True)

    async def append_event(self, session: Session, event: Event) -> Event:
        """Write ``event`` (without ``temp:`` state) to the file, then to the live session.

        Partial events are streaming fragments and are not stored. The write is not fsynced
        here; ``flush`` does that.
        """
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        line = (b'{"type":"event","event":'
                + event.model_dump_json(exclude_none=True, by_alias=True).encode() + b"}\n")
        _write_all(self._fd(session.id), line)
        self._commit_event_to_session(session, event)
        session.last_update_time = event.timestamp
        master = self._sessions.get(session.id)
        if master is not None and master is not session:
            self._update_session_state(master, event)
            master.events.append(event)
            master.last_update_time = event.timestamp
        return event

    async def flush(self) -> None:
        """fsync every open session file: what was appended is on disk when this returns."""
        self.sync()

    def sync(self) -> None:
        """``flush``, synchronously."""
        for fd in self._fds.values():
            os.fsync(fd)

    def close(self) -> None:
        """Sync and close the files (the service loads them again if used afterwards)."""
        self.sync()
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self._sessions.clear()

    def _fd(self, session_id: str) -> int:
        fd = self._fds.get(session_id)
        if fd is None:
            fd = os.open(self.path(session_id), os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            self._fds[session_id] = fd
        return fd

    def _load(self, session_id: str) -> Session:
        path = self.path(session_id)
        data = path.read_bytes()
        lines = data.split(b"\n")
        tail = lines.pop()  # after the last newline: b"" for a whole file, else a torn line
        records: list[dict[str, Any]] = []
        good = 0  # bytes of whole, readable lines
        for index, line in enumerate(lines):
            try:
                records.append(json.loads(line))
            except ValueError:
                if index == len(lines) - 1 and not tail:
                    tail = line + b"\n"  # the last line is garbage although it ended: torn too
                    break
                raise StoreCorrupt(f"{path}: line {index + 1} is unreadable") from None
            good += len(line) + 1
        if tail:
            log.warning("native session %s: dropped a torn last line (%d bytes)",
                        session_id, len(tail))
            self.truncated_bytes = len(tail)
            with open(path, "r+b") as handle:
                handle.truncate(good)
                os.fsync(handle.fileno())
        if not records or records[0].get("type") != "session":
            raise StoreCorrupt(f"{path}: no session header")
        header = records[0]
        session = Session(id=session_id, app_name=str(header["app_name"]),
                          user_id=str(header["user_id"]), state=dict(header.get("state") or {}),
                          last_update_time=float(header.get("created") or 0.0))
        for number, record in enumerate(records[1:], start=2):
            if record.get("type") != "event":
                raise StoreCorrupt(f"{path}: line {number} is not an event")
            event = Event.model_validate(record["event"])
            self._update_session_state(session, event)
            session.events.append(event)
            session.last_update_time = event.timestamp
        self._sessions[session_id] = session
        return session


def _light_copy(session: Session) -> Session:
    copied = session.model_copy(deep=False)
    copied.events = list(session.events)
    copied.state = copy.copy(session.state)
    return copied


def _header(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as handle:
            record = json.loads(handle.readline())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("type") == "session" else None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
