"""The daemon's sessions: creates, finds, lists and stops them; closes the dead on boot.

Live sessions are ``temporary`` children of a ``simple_one_for_one`` supervisor (``run``): a
session restarts its own harness child, and a session that ends stays ended (readable,
subscribable, never restarted). At shutdown the supervisor stops them all at once, each closing
itself. Sessions left running by a crashed daemon are closed on boot with ``exit {reason:
daemon_restarted}`` and a ``cancelled`` decision for every permission they left open (their files:
``actors.session.storage``; a harness's availability: ``actors.session.availability``).

A session that told its clients it ended (``closed``, ``failed``) winds down for a moment before
it moves from ``live`` to ``ended``; requests that tell a live session from an ended one (resume,
and the workspaces' merge and discard) take it through ``current``, which waits for that move, so
they see the state the clients were told.

``announce`` adds an event from outside (a ``workspace`` change) to a session's log: a live
session appends it in its own loop; an ended one has its log reopened for that one line (under
the session's lock, which ``resume`` holds too, so the log never has two writers).
"""

from __future__ import annotations

import functools
import logging
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from actors.harness import Driver, HarnessRequest
from actors.sandboxing.config import SandboxConfig
from actors.sandboxing.plans import build_plan, confinement_of
from actors.sandboxing.settings import check, check_worker, resolve
from actors.session.deps import SessionDeps
from actors.session.drivers import detect_all, driver_of
from actors.session.availability import check_available, refuse_if_not_here
from actors.session.closedsession import ClosedSession
from actors.session.eventlog import EventLog
from actors.session.framelog import open_frame_log
from actors.session.meta import meta_from_create
from actors.session.storage import load_sessions, open_new, reopen, reopen_frame_log
from actors.session.validate import check_create
from protocol import events as ev
from protocol.base import format_ts
from protocol.errors import (
    ActorGone, HarnessUnavailable, SandboxUnavailable, SessionBusy, SessionClosed, Unsupported, UnknownSession,
)
from protocol.messages import SessionCreate, SessionResume, SessionWarning
from protocol.models import Detection, Permissions, SessionInfo
from protocol.sandbox import SandboxInfo
from actors.session.config import KILL_MARGIN, SessionSettings, harness_defaults
from supervisor.threadimport import load
from supervisor.tree import ChildSpec, RestartType, Strategy, Supervisor, SupervisorSpec, supervise

if TYPE_CHECKING:  # the actor, its harness child and the core load with the first session
    from actors.session.actor import Session

__all__ = ["ClosedSession", "SessionTable"]

log = logging.getLogger("corral.sessions")


class SessionTable:
    """Every session of the daemon, live (children of the sessions supervisor) or ended."""

    def __init__(self, state_dir: Path, config: SessionSettings, ledger: Any, drivers: Mapping[str, Driver],
                 *, after_result: Any = None, watch: Any = None, observer: Any = None) -> None:
        self.state_dir = state_dir
        self.after_result = after_result
        """``SessionDeps.after_result`` of every session (the workspaces' changed-files count)."""
        self.watch = watch
        """Called with ``(id, name, harness, feed)`` as each session starts or resumes, before
        its first event (the notifier follows the feed); it must not block."""
        self.observer = observer
        """``SessionDeps.observer`` of every session (``actors.telemetry.Observer``)."""
        self.opener: Any = None
        """``SessionDeps.opener`` of every session: the placement backend's, when not local."""
        self.root = state_dir / "sessions"
        self.config = config
        self.ledger = ledger
        self.drivers = drivers
        self.live: dict[str, Session] = {}
        self.ended: dict[str, ClosedSession] = {}
        self.supervisor: Supervisor | None = None
        self.left_open: list[str] = []
        self._ended = trio.Event()  # set (and replaced) whenever a live session moves to ``ended``
        """Sessions the previous daemon left open (closed at boot): ``resume_on_boot`` resumes them."""
        self._locks: dict[str, trio.Lock] = {}
        self.sandbox_masks: list[str] = [str(state_dir)]
        """What a sandboxed session must not see but for its own parts (``HarnessRequest``)."""

    async def run(self, *, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED) -> None:
        """The root's ``sessions`` child: a ``simple_one_for_one`` supervisor of session actors.

        Ready with the supervisor's handle. Cancelling it stops every session at once, each
        closing itself as ``session.close`` would (see ``Session.run``) within its shutdown grace.
        """
        spec = SupervisorSpec(strategy=Strategy.SIMPLE_ONE_FOR_ONE, intensity=0, period=1.0)
        try:
            async with trio.open_nursery() as nursery:
                self.supervisor = await nursery.start(functools.partial(supervise, spec, name="sessions"))
                task_status.started(self.supervisor)
                if self.config.sessions.resume_on_boot:
                    nursery.start_soon(self._resume_left_open)
        finally:
            self.supervisor = None

    def boot(self) -> list[str]:
        """Load every session on disk; close those a crashed daemon left open. Returns their ids."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        found = load_sessions(self.root, self.config.sessions.durability)
        self.left_open.extend(found.left_open)
        self.ended.update((ended.id, ended) for ended in found.ended)
        return found.revived

    async def create(self, request: SessionCreate, *, session_id: str | None = None) -> SessionInfo:
        """Start a session; answers once it exists, even if its first child dies at once.

        A placement backend's node that lacks the session's cwd or the harness's binary is the
        exception: the session is closed at once and the create refused with that typed error
        (``placement.cwd_missing``, ``placement.binary_missing``), not left to a crash loop.

        Everything that can be refused (harness, cwd, model, env, options, log path, a missing
        binary) is checked before anything is written, so a refused request leaves nothing behind.
        """
        supervisor = self.supervisor
        if supervisor is None:
            raise SessionClosed("the daemon is shutting down")
        driver = await driver_of(self.drivers, request.harness)
        if driver is None:
            raise HarnessUnavailable(
                f"unknown harness {request.harness!r}; known: {', '.join(sorted(self.drivers))}")
        check_create(request)
        session_id = session_id or f"s-{secrets.token_hex(6)}"
        directory = self.root / session_id
        default_options, default_env = harness_defaults(self.config, request.harness)
        options = {**default_options, **(request.options or {})}
        sandbox = await self._sandbox(resolve(options, self.config.sandbox), driver)
        harness_request = HarnessRequest(
            sandbox=sandbox, sandbox_masks=self.sandbox_masks,
            session_id=session_id, cwd=request.cwd, model=request.model,
            permissions=request.permissions or Permissions(), env={**default_env, **(request.env or {})},
            mcp_servers=list(request.mcp_servers or []), options=options,
            resume=options.get("resume") if isinstance(options.get("resume"), str) else None,
            instructions=options.get("instructions") if isinstance(options.get("instructions"), str) else None,
            work_dir=str(directory / "harness"),
            runs_work=callable(getattr(driver, "work_runner", None)), state_dir=str(self.state_dir),
        )
        driver.translator(harness_request)  # validates the options
        await check_available(driver, options)
        harness_request = await _confined(driver, harness_request, self.config.sandbox)
        frame_log = open_frame_log(options.get("log_path"), cwd=request.cwd, state_dir=self.state_dir,
                                   session_dir=directory)
        sessions = self.config.sessions
        try:
            directory.mkdir(mode=0o700)
            (directory / "harness").mkdir(mode=0o700)
            meta = meta_from_create(session_id, request, created_at=format_ts(time.time()), sandbox=sandbox)
            event_log = await trio.to_thread.run_sync(functools.partial(
                open_new, directory, meta, durability=sessions.durability,
                memory_tail=sessions.memory_tail, fsync_interval=sessions.fsync_interval))
        except BaseException:
            if frame_log is not None:
                frame_log.close()
            raise
        deps = SessionDeps(driver=driver, sessions=sessions, children=self.config.children,
                           ledger=self.ledger, directory=directory, after_result=self.after_result,
                           observer=self.observer, opener=self.opener)
        session = (await _session_class())(meta, harness_request, deps, event_log, frame_log)
        await self._start(supervisor, session, frame_log, event_log)
        await refuse_if_not_here(session)
        if request.prompt:
            await session.prompt(request.prompt, "session")
        return session.info()

    async def resume(self, request: SessionResume) -> SessionInfo:
        """Reopen a ``closed`` or ``failed`` session whose harness can resume (see ``SessionResume``).

        ``unknown_session``; ``session_busy`` for a session that runs; ``unsupported`` for a
        harness that cannot resume or a session that never named its vendor conversation. The
        log continues at the next seq; the first event is ``restarted {reason: "resumed"}``.
        """
        async with self._lock(request.session_id):  # no ``announce`` writes the log meanwhile
            return await self._resume(request)

    async def announce(self, session_id: str, event: ev.Event) -> None:
        """Append ``event`` to the session's log, live or ended (see the module docstring);
        its subscribers see it. A session unknown here is skipped."""
        async with self._lock(session_id):
            live = self.live.get(session_id)
            if live is not None:
                try:
                    await live.announce(event)
                    return
                except ActorGone:  # it ended before taking the event: its log is free soon
                    await live.closed.wait()
            ended = self.ended.get(session_id)
            if ended is not None:
                await ended.append(self.root / session_id, event, durability=self.config.sessions.durability)

    def _lock(self, session_id: str) -> trio.Lock:
        return self._locks.setdefault(session_id, trio.Lock())

    async def _resume(self, request: SessionResume) -> SessionInfo:
        supervisor = self.supervisor
        if supervisor is None:
            raise SessionClosed("the daemon is shutting down")
        session_id = request.session_id
        ended = await self.current(session_id)
        if not isinstance(ended, ClosedSession):
            raise SessionBusy(f"session {session_id} is {ended.info().state}; "
                              "only a closed or failed session can be resumed")
        meta = ended.meta
        driver = await driver_of(self.drivers, meta.harness)
        if driver is None:
            raise HarnessUnavailable(f"session {session_id} ran on {meta.harness!r}, which this daemon "
                                     "does not offer", data={"harness": meta.harness})
        if not driver.features.resume or (meta.vendor_session_id is None and meta.harness != "fake"):
            raise Unsupported(f"session {session_id} cannot be resumed: its harness {meta.harness!r} "
                              "never named a conversation to resume", data={"harness": meta.harness})
        if request.env is not None:
            check_create(SessionCreate(id=0, harness=meta.harness, cwd=meta.cwd, env=request.env))
        directory = self.root / session_id
        default_options, default_env = harness_defaults(self.config, meta.harness)
        options = {**default_options, **meta.options}
        env = {**default_env, **(request.env or {})}
        sandbox = await self._sandbox(meta.sandbox, driver)
        harness_request = HarnessRequest(
            sandbox=sandbox, sandbox_masks=self.sandbox_masks,
            session_id=session_id, cwd=meta.cwd, model=meta.model, permissions=meta.permissions,
            env=env, options=options, mcp_servers=[m.with_secrets(env) for m in meta.mcp_servers],
            resume=meta.vendor_session_id,
            instructions=options.get("instructions") if isinstance(options.get("instructions"), str) else None,
            work_dir=str(directory / "harness"),
            runs_work=callable(getattr(driver, "work_runner", None)), state_dir=str(self.state_dir),
        )
        driver.translator(harness_request)  # validates the options
        await check_available(driver, options)
        harness_request = await _confined(driver, harness_request, self.config.sandbox)
        frame_log = reopen_frame_log(options.get("log_path"), meta.cwd, self.state_dir, directory)
        sessions = self.config.sessions
        meta = msgspec.structs.replace(meta, state="starting", closed_reason=None)
        try:
            event_log = await trio.to_thread.run_sync(functools.partial(
                reopen, directory, meta, durability=sessions.durability,
                memory_tail=sessions.memory_tail, fsync_interval=sessions.fsync_interval))
        except BaseException:
            if frame_log is not None:
                frame_log.close()
            raise
        deps = SessionDeps(driver=driver, sessions=sessions, children=self.config.children,
                           ledger=self.ledger, directory=directory, after_result=self.after_result,
                           observer=self.observer, opener=self.opener)
        session = (await _session_class())(meta, harness_request, deps, event_log, frame_log,
                                           resumed=True)
        session.feed = ended.feed  # subscribers of the closed session follow the resumed one
        ended.feed.rebind(event_log)
        await self._start(supervisor, session, frame_log, event_log)
        await refuse_if_not_here(session)
        log.info("session %s resumed (%s, conversation %s)", session_id, meta.harness,
                 meta.vendor_session_id or "new")
        return session.info()

    async def current(self, session_id: str) -> Session | ClosedSession:
        """The session as its clients were told it is; raises ``UnknownSession``.

        A session whose core published its end (``closed``, ``failed``) still winds down for a
        moment (its log closes, its actor exits) before it moves to ``ended``; it is waited for
        (bounded by its close), so that a request right after the ``closed`` event meets the
        ended session, never the live one (``workspace.discard`` would call it busy).
        """
        session = self.live.get(session_id)
        if session is not None and session.state in ("closed", "failed"):
            with trio.move_on_after(self.config.sessions.close_timeout + KILL_MARGIN):
                while session_id in self.live:
                    await self._ended.wait()
        return self.get(session_id)

    async def _resume_left_open(self) -> None:
        """``[sessions] resume_on_boot``: resume what the last daemon left open, one by one."""
        for session_id in self.left_open:
            try:
                await self.resume(SessionResume(id=0, session_id=session_id))
            except Exception as exc:  # noqa: BLE001 - one session that cannot come back is logged
                log.warning("session %s was not resumed at boot: %s", session_id, exc)
        self.left_open = []

    async def _start(self, supervisor: Supervisor, session: Session, frame_log: Any,
                     event_log: EventLog) -> None:
        """Start ``session`` as a temporary child of the sessions supervisor."""
        sessions = self.config.sessions
        # The session's own close bound, then as long again for the kill and the end's records.
        spec = ChildSpec(id=session.id, start=functools.partial(self._run_session, session),
                         restart=RestartType.TEMPORARY,
                         shutdown=session.close_bound + sessions.close_timeout + KILL_MARGIN)
        try:
            await supervisor.start_child(spec)
        except BaseException as exc:
            if frame_log is not None:
                frame_log.close()
            event_log.close()
            if isinstance(exc, ActorGone):
                raise SessionClosed("the daemon is shutting down") from None
            raise

    async def _sandbox(self, info: SandboxInfo | None, driver: Driver) -> SandboxInfo | None:
        """``info`` with its ``effective`` backend here; ``sandbox_unavailable`` when its mode
        cannot be honoured (``actors.sandboxing.settings.check``; for a native worker also
        ``check_worker``) or the children run on another node."""
        if info is None:
            return None
        if self.opener is not None:
            # A placed child runs on another node: neither the Landlock ruleset (applied in a
            # child forked here) nor the session's proxy socket (served here) reaches it.
            raise SandboxUnavailable(
                "sandboxed sessions run on the local placement backend only "
                "([placement] backend is not \"local\")", data={"placement": "remote"})
        checked = await trio.to_thread.run_sync(functools.partial(check, info, self.config.sandbox))
        if getattr(driver, "spawn", None) is not None:
            # A native worker: exec'd inside bubblewrap, or forked and confining itself with
            # Landlock. Its own model calls keep the host's network; its bash commands get ``net``
            # (``model``: the session's proxy on its loopback port, through Landlock's TCP rules).
            await trio.to_thread.run_sync(functools.partial(
                check_worker, checked, self.config.sandbox, harness=driver.name))
        return checked

    async def _run_session(self, session: Session, *,
                           task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED) -> None:
        self.live[session.id] = session
        if self.watch is not None:
            self.watch(session.id, session.meta.name, session.meta.harness, session.feed)
        try:
            await session.run(task_status=task_status)
        finally:
            self.live.pop(session.id, None)
            self.ended[session.id] = ClosedSession(session.meta, session.log, session.feed)
            self._ended.set()
            self._ended = trio.Event()

    def get(self, session_id: str) -> Session | ClosedSession:
        """The session with this id; raises ``UnknownSession``."""
        found = self.live.get(session_id) or self.ended.get(session_id)
        if found is None:
            raise UnknownSession(f"no session {session_id!r}")
        return found

    def live_session(self, session_id: str) -> Session:
        """A running session; ``session_closed`` for one that ended."""
        found = self.get(session_id)
        if isinstance(found, ClosedSession):
            raise SessionClosed(f"session {session_id} is {found.meta.state}")
        return found

    def warnings(self, session_id: str) -> list[SessionWarning]:
        """What the live session's driver warns of for its request (``session.create``'s
        ``warnings``); a driver without a ``warnings`` method has none."""
        session = self.live.get(session_id)
        driver = self.drivers.get(session.core.meta.harness) if session is not None else None
        warn = getattr(driver, "warnings", None)
        if session is None or not callable(warn):
            return []
        found: list[SessionWarning] = warn(session.core.request)
        return found

    def infos(self) -> list[SessionInfo]:
        every = [s.info() for s in self.live.values()]
        every += [s.info() for sid, s in self.ended.items() if sid not in self.live]
        return sorted(every, key=lambda i: (i.created_at, i.id))

    async def detections(self, *, models: bool = False) -> list[Detection]:
        """Every harness's detection, probed at once (``actors.session.drivers.detect_all``)."""
        return await detect_all(self.drivers, models=models)


async def _confined(driver: Driver, request: HarnessRequest, config: SandboxConfig) -> HarnessRequest:
    """``request`` with its ``confinement`` when it is sandboxed and its driver's children
    confine themselves (the native workers: under bubblewrap too, for their bash commands' network
    and Landlock on top); other children are confined as they are spawned."""
    if request.sandbox is None or getattr(driver, "spawn", None) is None:
        return request
    sandbox = request.sandbox
    plan = await trio.to_thread.run_sync(functools.partial(
        build_plan, request, driver.launch(request), sandbox, harness=driver.name,
        masks=request.sandbox_masks))
    confinement = confinement_of(plan, effective=sandbox.effective, landlock_enabled=config.landlock)
    return msgspec.structs.replace(request, confinement=confinement)


async def _session_class() -> type[Session]:
    """``Session``, imported off the trio thread the first time a session starts: a daemon
    with none never loads the actor, its harness child, the core and their messages."""
    session: type[Session] = (await load("actors.session.actor")).Session
    return session
