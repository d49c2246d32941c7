"""Helpers for end-to-end tests of real vendor CLIs behind a real daemon, shared by every vendor.

``daemon_session`` starts a daemon process (``daemonproc.start_daemon``) on a private state
directory, creates one session with the given ``session.create`` params through a raw protocol
client, subscribes to it, and yields a ``Rig``; on the way out it stops the daemon (which must
exit 0) and, if the body succeeded, checks that no process carrying the daemon's marker is left.
On failure the tail of the daemon's output (the harness child's stderr lines included) is printed.

Events are the ``event`` objects of the session's frames (``{"type": "tool", ...}``); ``is_kind``
builds predicates on them and ``of`` filters a list of them.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import trio

from .daemonproc import DaemonProc, RawClient, raw_client, start_daemon, stop_daemon, wait_gone

__all__ = ["Frame", "Rig", "cmdline", "daemon_session", "family", "is_kind", "marked",
           "marked_gone", "of"]

Frame = dict[str, Any]
Predicate = Callable[[Frame], bool]


def is_kind(kind: str, **fields: Any) -> Predicate:
    """A predicate on an event: its type is ``kind`` and it has every one of ``fields``."""
    return lambda e: e["type"] == kind and all(e.get(k) == v for k, v in fields.items())


def of(events: list[Frame], kind: str) -> list[Frame]:
    """The events of one kind, in order."""
    return [e for e in events if e["type"] == kind]


@dataclass
class Rig:
    """A daemon, one subscribed client and one session."""

    daemon: DaemonProc
    client: RawClient
    sid: str
    work: Path
    timeout: float

    async def prompt(self, text: str, client: RawClient | None = None) -> str:
        """``session.prompt``; returns the delivery."""
        result = await (client or self.client).ok("session.prompt", session_id=self.sid, text=text)
        return str(result["delivery"])

    async def until(self, predicate: Predicate, client: RawClient | None = None) -> list[Frame]:
        """This session's events (as ``client`` receives them) up to the first matching one."""
        frames = await (client or self.client).events_until(
            self.sid, lambda f: f["type"] == "event" and predicate(f["event"]), timeout=self.timeout)
        return [f["event"] for f in frames if f["type"] == "event"]

    async def turn(self, text: str) -> list[Frame]:
        """Prompt (it must start a turn) and return the events up to its ``result``."""
        assert await self.prompt(text) == "prompted"
        return await self.until(is_kind("result"))

    async def info(self) -> Frame:
        """``session.get``'s ``SessionInfo``."""
        session: Frame = (await self.client.ok("session.get", session_id=self.sid))["session"]
        return session

    async def pid(self) -> int:
        """The pid of the session's harness child (it must have one)."""
        pid = (await self.info())["pid"]
        assert isinstance(pid, int), pid
        return pid


@asynccontextmanager
async def daemon_session(state: Path, params: dict[str, Any], *, timeout: float,
                         ready: Predicate | None = None,
                         config: str | None = None) -> AsyncIterator[Rig]:
    """A daemon on ``state`` with one subscribed session made from ``params``.

    ``ready``: wait for the first event that satisfies it before yielding (e.g. the session's
    ``status idle`` once the harness finished its handshake); ``config``: the daemon's config
    file. Cancellation: the daemon is
    stopped, shielded, whatever ends the block.
    """
    daemon = await start_daemon(state, config=config)
    passed = False
    try:
        async with raw_client(daemon) as client:
            created = await client.call("session.create", timeout=timeout, **params)
            assert created["type"] == "ok", created
            created = created["result"]
            sid = created["session"]["id"]
            await client.ok("session.subscribe", session_id=sid)
            rig = Rig(daemon, client, sid, Path(params["cwd"]), timeout)
            if ready is not None:
                await rig.until(ready)
            yield rig
        passed = True
    except BaseException:
        print((state / "test-daemon.out").read_text(errors="replace")[-8000:])
        raise
    finally:
        with trio.CancelScope(shield=True):
            code = await stop_daemon(daemon)
    assert code == 0, code
    if passed:
        assert marked_gone(state) == []


async def close_and_check_gone(rig: Rig, state: Path, processes: list[int]) -> None:
    """Close the session mid-turn: ``exit {closed}`` (after at most an interrupted result), no
    pid, and none of ``processes`` nor anything carrying the state dir's marker left (but the
    daemon's own permanent children: the native fork server)."""
    await rig.client.ok("session.close", session_id=rig.sid)
    events = await rig.until(is_kind("exit"))
    assert of(events, "exit")[0]["reason"] == "closed"
    assert [r["stop_reason"] for r in of(events, "result")] in ([], ["interrupted"])
    info = await rig.info()
    assert (info["state"], info["pid"]) == ("closed", None)
    assert wait_gone(processes) == []
    status = await rig.client.ok("daemon.status")
    permanent = {c["pid"] for c in status["children"] if c["kind"] == "native-forkserver"}
    assert [pid for pid in marked(state) if pid not in permanent] == []


def family(pid: int) -> list[int]:
    """``pid`` and every descendant it has now."""
    try:
        return [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
    except psutil.NoSuchProcess:
        return [pid]


def cmdline(pid: int) -> str:
    """A process's command line, or ``""`` once it is gone."""
    try:
        return " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return ""


def marked(state: Path) -> list[int]:
    """Live (non-zombie) processes whose environment carries the marker of the daemon on ``state``.

    The daemon gives every child ``CORRAL_STATE_DIR`` = the real path of its state directory, and
    every descendant inherits it.
    """
    marker = os.path.realpath(state)
    found = []
    for proc in psutil.process_iter(["environ", "status"]):
        if proc.info.get("status") == psutil.STATUS_ZOMBIE:
            continue
        if (proc.info.get("environ") or {}).get("CORRAL_STATE_DIR") == marker:
            found.append(proc.pid)
    return found


def unmarked(state: Path, pids: list[int]) -> list[int]:
    """Those of ``pids`` still alive yet without the marker of the daemon on ``state``.

    A vendor CLI runs short-lived helpers; one that has exited by the time the marker is read is
    gone, not leaked, so it is not counted.
    """
    carrying = set(marked(state))
    left = []
    for pid in pids:
        if pid in carrying:
            continue
        try:
            proc = psutil.Process(pid)
        except psutil.NoSuchProcess:
            continue
        if _alive(proc):
            left.append(pid)
    return left


def marked_gone(state: Path, timeout: float = 20) -> list[int]:
    """The marked processes still alive after waiting up to ``timeout`` seconds for them to go."""
    procs = []
    for pid in marked(state):
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return [p.pid for p in alive if _alive(p)]


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
