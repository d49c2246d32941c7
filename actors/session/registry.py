"""The session supervisor: creates, finds, lists and stops sessions; revives the dead on boot.

Sessions are ``temporary`` children of this supervisor: a session restarts its own harness
child, and a session that ends stays ended (readable, subscribable, never restarted). Sessions
left running by a crashed daemon are closed on boot with ``exit {reason: daemon_restarted}``
and a ``cancelled`` decision for every permission they left open.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

import msgspec
import trio

from actors.harness import Driver, HarnessRequest
from actors.session.actor import Session, SessionDeps
from actors.session.eventlog import EventLog
from actors.session.feed import Feed
from actors.session.framelog import FrameLog
from actors.session.meta import SessionMeta, list_sessions, meta_from_create, write_meta
from protocol import events as ev
from protocol.base import format_ts
from protocol.errors import BadRequest, HarnessUnavailable, StorageFailed, SessionClosed, UnknownSession
from protocol.messages import SessionCreate
from protocol.models import Detection, Permissions, SessionInfo
from supervisor.config import Config, harness_defaults

log = logging.getLogger("corral.sessions")
_DETECTION_TTL = 30.0


class ClosedSession:
    """A session that ended (in this run or an earlier one): read-only, still subscribable."""

    def __init__(self, meta: SessionMeta, log: EventLog) -> None:
        self.meta = meta
        self.log = log
        self.feed = Feed(log)

    @property
    def id(self) -> str:
        return self.meta.id

    def info(self) -> SessionInfo:
        return _info(self.meta, self.log.last_seq, None)


class Sessions:
    """Every session of the daemon, live or ended."""

    def __init__(self, state_dir: Path, config: Config, ledger: Any, drivers: dict[str, Driver]) -> None:
        self.root = state_dir / "sessions"
        self.config = config
        self.ledger = ledger
        self.drivers = drivers
        self.live: dict[str, Session] = {}
        self.ended: dict[str, ClosedSession] = {}
        self._nursery: trio.Nursery | None = None
        self._detections: dict[str, tuple[float, Detection]] = {}

    async def run(self, *, task_status: trio.TaskStatus[Sessions] = trio.TASK_STATUS_IGNORED) -> None:
        """Own every session actor. Cancelling this closes every session gracefully, all at
        once, within the daemon's shutdown timeout; whatever is left is then cancelled (each
        session still kills its child within its close timeout)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started(self)
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None
                with trio.CancelScope(shield=True), \
                        trio.move_on_after(self.config.daemon.shutdown_timeout):
                    await self.close_all()

    def boot(self) -> list[str]:
        """Load every session on disk; close those a crashed daemon left open. Returns their ids."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        revived: list[str] = []
        for directory, meta in list_sessions(self.root):
            if isinstance(meta, Exception):
                log.warning("session %s is unreadable and skipped: %s", directory.name, meta)
                continue
            try:
                event_log, report = EventLog.open(directory, meta.id, durability=self.config.sessions.durability,
                                                  memory_tail=0)
            except StorageFailed as exc:
                log.warning("session %s has a damaged event log and is skipped: %s", meta.id, exc)
                continue
            if report.truncated_bytes:
                log.warning("session %s: a torn last line (%d bytes) was truncated",
                            meta.id, report.truncated_bytes)
            if meta.state not in ("closed", "failed"):
                _close_after_crash(event_log)
                meta = msgspec.structs.replace(meta, state="closed", closed_reason="daemon_restarted")
                write_meta(directory, meta)
                revived.append(meta.id)
            event_log.close()  # still readable; an ended session holds no descriptor
            self.ended[meta.id] = ClosedSession(meta, event_log)
        return revived

    async def create(self, request: SessionCreate, *, session_id: str | None = None) -> SessionInfo:
        """Start a session; answers once it exists, even if its first child dies at once.

        Everything that can be refused (harness, cwd, options, log path, a missing binary) is
        checked before anything is written, so a refused request leaves nothing behind.
        """
        if self._nursery is None:
            raise SessionClosed("the daemon is shutting down")
        driver = self.drivers.get(request.harness)
        if driver is None:
            raise HarnessUnavailable(
                f"unknown harness {request.harness!r}; known: {', '.join(sorted(self.drivers))}")
        if not Path(request.cwd).is_dir():
            raise BadRequest(f"cwd {request.cwd!r} is not a directory")
        session_id = session_id or f"s-{secrets.token_hex(6)}"
        directory = self.root / session_id
        default_options, default_env = harness_defaults(self.config, request.harness)
        options = {**default_options, **(request.options or {})}
        harness_request = HarnessRequest(
            session_id=session_id, cwd=request.cwd, model=request.model,
            permissions=request.permissions or Permissions(), env={**default_env, **(request.env or {})},
            mcp_servers=list(request.mcp_servers or []), options=options,
            resume=options.get("resume") if isinstance(options.get("resume"), str) else None,
            instructions=options.get("instructions") if isinstance(options.get("instructions"), str) else None,
            work_dir=str(directory / "harness"),
        )
        driver.translator(harness_request)  # validates the options
        await self._check_available(driver, options)
        frame_log = _frame_log(options)
        directory.mkdir(mode=0o700)
        (directory / "harness").mkdir(mode=0o700)
        meta = meta_from_create(session_id, request, created_at=format_ts(time.time()))
        write_meta(directory, meta)
        sessions = self.config.sessions
        event_log, _ = EventLog.open(directory, session_id, durability=sessions.durability,
                                     memory_tail=sessions.memory_tail,
                                     fsync_interval=sessions.fsync_interval)
        deps = SessionDeps(driver=driver, sessions=self.config.sessions,
                           children=self.config.children, ledger=self.ledger, directory=directory)
        session = Session(meta, harness_request, deps, event_log, frame_log)
        await self._nursery.start(self._run_session, session)
        if request.prompt:
            await session.prompt(request.prompt, "session")
        return session.info()

    async def _check_available(self, driver: Driver, options: dict[str, Any]) -> None:
        """``harness_unavailable`` for a missing binary (``options.binary`` or the detected one)
        or one older than the driver's floor."""
        binary = options.get("binary")
        if isinstance(binary, str) and binary:
            if shutil.which(os.path.expanduser(binary)) is None:
                raise HarnessUnavailable(f"{driver.name}: {binary!r} is not an executable")
            return
        detection = await self._detect(driver.name, driver)
        if not detection.available:
            raise HarnessUnavailable(f"{driver.name} is not available: {detection.reason or 'not found'}",
                                     data={"harness": driver.name})

    async def _run_session(self, session: Session, *, task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED) -> None:
        self.live[session.id] = session
        try:
            await session.run(task_status=task_status)
        except Exception:
            # A session is a temporary child: its crash is logged and ends it alone.
            log.exception("session %s crashed", session.id)
            if not session.started:
                raise  # it never started: session.create reports the error
        finally:
            self.live.pop(session.id, None)
            session.log.close()  # still readable; an ended session holds no descriptor
            self.ended[session.id] = ClosedSession(session.meta, session.log)

    def get(self, session_id: str) -> Session | ClosedSession:
        """The session with this id; raises ``UnknownSession``."""
        found = self.live.get(session_id) or self.ended.get(session_id)
        if found is None:
            raise UnknownSession(f"no session {session_id!r}")
        return found

    def live_session(self, session_id: str) -> Session:
        """A running session; ``session_closed`` for one that ended."""
        found = self.get(session_id)
        if not isinstance(found, Session):
            raise SessionClosed(f"session {session_id} is {found.meta.state}")
        return found

    def infos(self) -> list[SessionInfo]:
        every = [s.info() for s in self.live.values()]
        every += [s.info() for sid, s in self.ended.items() if sid not in self.live]
        return sorted(every, key=lambda i: (i.created_at, i.id))

    async def close_all(self) -> None:
        """Close every live session concurrently, each within its close timeout."""
        async with trio.open_nursery() as nursery:
            for session in list(self.live.values()):
                nursery.start_soon(session.close, "session")

    async def detections(self) -> list[Detection]:
        """Every harness's detection, cached for a short while (``--version`` is slow)."""
        out: list[Detection] = []
        for name, driver in sorted(self.drivers.items()):
            out.append(await self._detect(name, driver))
        return out

    async def _detect(self, name: str, driver: Driver) -> Detection:
        now = trio.current_time()
        cached = self._detections.get(name)
        if cached is None or now - cached[0] > _DETECTION_TTL:
            cached = (now, await driver.detect())
            self._detections[name] = cached
        return cached[1]


def _frame_log(options: dict[str, Any]) -> FrameLog | None:
    """The ``options.log_path`` frame log, opened now so a bad path is the caller's ``bad_request``."""
    path = options.get("log_path")
    if path is None:
        return None
    if not isinstance(path, str) or not path:
        raise BadRequest("options.log_path must be a file path")
    try:
        return FrameLog(path)
    except OSError as exc:
        raise BadRequest(f"cannot open options.log_path {path!r}: {exc.strerror}") from None


def _info(meta: SessionMeta, last_seq: int, pid: int | None) -> SessionInfo:
    return SessionInfo(
        id=meta.id, name=meta.name, harness=meta.harness, cwd=meta.cwd, model=meta.model,
        state=meta.state, created_at=meta.created_at, last_seq=last_seq, restarts=meta.restarts,
        pid=pid, vendor_session_id=meta.vendor_session_id,
    )


def _close_after_crash(event_log: EventLog) -> None:
    """Close a session a crashed daemon left open: cancel its open permissions, then ``exit``."""
    open_permissions: dict[str, None] = {}
    for frame in event_log.frames_from(1):
        match frame.event:
            case ev.Permission(permission_id=pid):
                open_permissions[pid] = None
            case ev.PermissionDecided(permission_id=pid):
                open_permissions.pop(pid, None)
    now = time.time()
    for pid in open_permissions:
        event_log.append(ev.PermissionDecided(permission_id=pid, decision="cancelled", by="session"), now=now)
    event_log.append(ev.Exit(reason="daemon_restarted"), now=now)
    event_log.sync()
