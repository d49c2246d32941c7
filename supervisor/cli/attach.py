"""Following a session on the terminal: ``corral attach`` and ``corral logs --follow``.

Both render the session's events as text (``render.Renderer``) from a seq on, through
``follow_session`` (which reconnects by itself), and stop when the session ends (a
``status`` of ``closed``/``failed``, or an ``exit`` that closed it) or on SIGINT, which
detaches and leaves the session running. ``attach`` with a terminal on stdin also asks
y/N for each permission still open once it has caught up with the history: one question at
a time, answered with ``session.permission`` on a short connection of its own; a decision
made elsewhere meanwhile withdraws the question and is shown as it arrives.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TextIO

import trio

from protocol.errors import AlreadyDecided, DaemonNotRunning, SessionClosed, UnknownPermission
from protocol.events import Decision, Event, Exit, Permission, PermissionDecided, Status

from supervisor.client import open_client
from supervisor.client.subscription import RawEventFrame
from supervisor.client.follow import follow_session
from supervisor.cli.render import Renderer, short

__all__ = ["attach", "follow_frames", "session_ended"]

ENDED_STATES = ("closed", "failed")


def session_ended(event: Event) -> bool:
    """Whether no event can follow this one: the session closed or failed."""
    match event:
        case Status(state=state):
            return state in ENDED_STATES
        case Exit(reason=reason):
            return reason == "daemon_restarted"
    return False


async def follow_frames(state_dir: Path, session_id: str, from_seq: int,
                        on_frame: Callable[[RawEventFrame, bool], bool], *, err: TextIO,
                        announce: str | None = None) -> None:
    """Call ``on_frame(frame, caught_up)`` from ``from_seq`` on until it returns True, the session ends, or SIGINT.

    ``caught_up`` is true from the event that was the session's newest when the follow began.
    ``announce`` is written to ``err`` once SIGINT is handled (so a Ctrl-C after it detaches).

    Raises ``UnknownSession`` (before following) and any error the follow ends with; a
    daemon that goes away is waited for (a line on ``err`` says so once per outage).
    """
    async with open_client(state_dir) as client:
        info = await client.get(session_id)
    if info.state in ENDED_STATES and from_seq > info.last_seq:
        return
    outage = False

    def on_retry(error: DaemonNotRunning, delay: float) -> None:
        nonlocal outage
        if not outage:
            err.write(f"corral: {error.message}; reconnecting…\n")
            err.flush()
            outage = True

    with trio.open_signal_receiver(signal.SIGINT) as signals:
        if announce is not None:
            err.write(announce + "\n")
            err.flush()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_cancel_on_signal, signals, nursery.cancel_scope)
            async with follow_session(state_dir, session_id, from_seq, on_retry=on_retry) as frames:
                async for item in frames:
                    outage = False
                    caught_up = item.seq >= info.last_seq
                    done = on_frame(item, caught_up)
                    ended = item.frame is not None and session_ended(item.frame.event)
                    if done or ended or (caught_up and info.state in ENDED_STATES):
                        break
            nursery.cancel_scope.cancel()


async def attach(state_dir: Path, session_id: str, from_seq: int, *, out: TextIO, err: TextIO,
                 interactive: bool, color: bool, terminal: bool = False) -> None:
    """Render the session from ``from_seq`` until it ends or SIGINT; ask for permissions if ``interactive``.

    ``terminal``: ``out`` is a terminal, where an open question is kept as the last line.
    """
    renderer = Renderer(out, color=color, terminal=terminal)
    asker = _Asker(state_dir, session_id, renderer)
    async with trio.open_nursery() as nursery:
        if interactive:
            nursery.start_soon(asker.read_stdin)

        def on_frame(item: RawEventFrame, caught_up: bool) -> bool:
            if item.frame is None:
                return False
            event = item.frame.event
            match event:
                case Permission(permission_id=pid):
                    asker.open[pid] = event
                case PermissionDecided(permission_id=pid):
                    asker.decided(pid)
            renderer.render(event)
            if isinstance(event, Permission) and not interactive:
                err.write(f"  answer with: corral approve {session_id} {event.permission_id} "
                          "[--deny | --always]\n")
                err.flush()
            if interactive and caught_up:
                for permission in list(asker.open.values()):
                    if permission.permission_id not in asker.asked:
                        asker.asked.add(permission.permission_id)
                        nursery.start_soon(asker.ask, permission)
            return False

        await follow_frames(state_dir, session_id, from_seq, on_frame, err=err,
                            announce=f"attached to {session_id}; Ctrl-C detaches (the session keeps running)")
        renderer.finish()
        nursery.cancel_scope.cancel()


class _Asker:
    """The permission questions of one attach: one at a time, withdrawn when decided elsewhere."""

    def __init__(self, state_dir: Path, session_id: str, renderer: Renderer) -> None:
        self.state_dir = state_dir
        self.session_id = session_id
        self.renderer = renderer
        self.open: dict[str, Permission] = {}
        self.asked: set[str] = set()
        self._asking: dict[str, trio.CancelScope] = {}
        self._lock = trio.Lock()
        self._lines_send, self._lines = trio.open_memory_channel[str](16)

    def decided(self, permission_id: str) -> None:
        """Another answer won: withdraw the question (now, before the decision is shown)."""
        self.open.pop(permission_id, None)
        scope = self._asking.pop(permission_id, None)
        if scope is not None:
            scope.cancel()
            self.renderer.answered(echoed=False)

    async def read_stdin(self) -> None:
        """Feed stdin lines to the questions; EOF ends the questions (the closed channel)."""
        async with self._lines_send:
            while line := await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True):
                await self._lines_send.send(line)

    async def ask(self, permission: Permission) -> None:
        pid = permission.permission_id
        async with self._lock:
            if pid not in self.open:
                return
            with trio.CancelScope() as scope:
                self._asking[pid] = scope
                while True:  # a line typed before the question is not its answer
                    try:
                        self._lines.receive_nowait()
                    except trio.WouldBlock:
                        break
                self.renderer.ask(f"allow {permission.tool} {short(permission.input)}? [y/N/a(lways)] ")
                try:
                    line = await self._lines.receive()
                except trio.EndOfChannel:
                    self.renderer.answered(echoed=False)
                    return
            if scope.cancelled_caught:
                return
            self._asking.pop(pid, None)
            self.renderer.answered(echoed=True)
            await self._answer(pid, _decision(line))

    async def _answer(self, pid: str, decision: Decision) -> None:
        try:
            async with open_client(self.state_dir) as client:
                await client.permission(self.session_id, pid, decision)
        except (AlreadyDecided, UnknownPermission, SessionClosed) as exc:
            self.renderer.line(f"permission {pid}: {exc.message}")


async def _cancel_on_signal(signals: AsyncIterator[int], scope: trio.CancelScope) -> None:
    async for _ in signals:
        scope.cancel()
        return


def _decision(line: str) -> Decision:
    answer = line.strip().lower()
    if answer in ("y", "yes"):
        return "allow"
    if answer in ("a", "always"):
        return "allow_always"
    return "deny"
