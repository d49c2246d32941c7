"""The OpenCode server actor: one ``opencode serve`` shared by the sessions of one fingerprint.

What it owns: the server process (a ledger child of kind ``opencode-server``, in its own process
group, killed with its group), the HTTP client that reaches it (Basic auth with a password made
for each run), and the one event stream (``GET /global/event``) it reads for all its sessions.
Restart type: ``permanent`` under the ``opencode`` supervisor (``servers.OpenCodeServers``):
one ``run`` is one generation; when the process or its event stream ends, ``run`` raises and the
supervisor starts the next generation (with its backoff). The same actor object serves every
generation, so sessions keep their handle and wait for ``ready`` again.

Sessions attach (``attach``) and get an ``Attachment``: a bounded channel of the events whose
``sessionID`` they have routed (``Attachment.route``), plus the HTTP client. When a generation
ends, every attachment's channel is closed with the server's exit status, which the session's
virtual child reports as its own exit (so the session sees a crash, restarts and resumes by
its OpenCode session id on the next generation).

The URL is read from what the server prints (``… listening on http://127.0.0.1:PORT``): with
``--port 0`` OpenCode may still take 4096, or another port when that one is busy.
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from actors.harness import Launch
from protocol.errors import ActorGone, ChildExited, LaunchFailed
from supervisor.proc.spec import ExitStatus, ProcessSpec
from supervisor.threadimport import load


if TYPE_CHECKING:  # the HTTP client (h11) loads with the first server that runs (``run``)
    from .http import HttpClient

__all__ = ["Attachment", "OpenCodeServer", "ServerSettings"]

log = logging.getLogger("corral.opencode")

KIND = "opencode-server"
_URL = re.compile(rb"https?://([0-9.]+|\[[0-9a-f:]+\]|localhost):(\d+)")


class ServerSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds of one server: start-up wait, close grace, per-session event backlog, and the
    largest frame it may send (a stdout line, an HTTP response body, one event of its stream)."""

    startup_timeout: float = 60.0
    shutdown: float = 5.0
    backlog: int = 10_000
    frame_limit: int = 16 * 1024 * 1024
    linger: float = 10.0
    """Seconds a server whose last session lost it to a crash waits for that session to come
    back before it stops (a session's first restart is immediate; a close stops it at once)."""


class Attachment:
    """One session's view of a server generation: its events and the HTTP client."""

    def __init__(self, server: OpenCodeServer, generation: int, backlog: int) -> None:
        self.server = server
        self.generation = generation
        self.client: HttpClient = server.client_or_raise()
        self.pid: int = server.pid or 0
        self._send, self.events = trio.open_memory_channel[bytes](backlog)
        self._sessions: set[str] = set()
        self.ended: ExitStatus | None = None
        """The server's exit status when its generation ended under this attachment."""

    def route(self, session_id: str) -> None:
        """Deliver the events of OpenCode session ``session_id`` here from now on."""
        self._sessions.add(session_id)
        self.server.routes[session_id] = self

    def detach(self) -> None:
        """Stop delivering events here (the session closed or moved on)."""
        for sid in self._sessions:
            if self.server.routes.get(sid) is self:
                del self.server.routes[sid]
        self.server.attachments.discard(self)
        self._send.close()

    def deliver(self, event: bytes) -> None:
        try:
            self._send.send_nowait(event)
        except trio.WouldBlock:
            log.warning("opencode session events overflowed %d queued; detaching it",
                        self.events.statistics().current_buffer_used)
            self._send.close()  # the session sees its child end and restarts
        except trio.ClosedResourceError:
            pass

    def end(self, status: ExitStatus | None) -> None:
        self.ended = status
        self._send.close()


class OpenCodeServer:
    """The actor; ``run`` is its start function (one generation per call)."""

    def __init__(self, key: str, launch: Launch, *, ledger: Any, settings: ServerSettings,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.key = key
        self.launch = launch
        self.ledger = ledger
        self.settings = settings
        self.pid: int | None = None
        self.generation = 0
        self.last_exit: ExitStatus | None = None
        self.routes: dict[str, Attachment] = {}
        self.attachments: set[Attachment] = set()
        self._client: HttpClient | None = None
        self._ready = trio.Event()
        self._on_change = on_change

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def client_or_raise(self) -> HttpClient:
        if self._client is None:
            raise ActorGone(f"opencode server {self.key} is not running")
        return self._client

    async def attach(self, timeout: float) -> Attachment:
        """An attachment to the running generation (waits up to ``timeout`` for it to be ready)."""
        with trio.move_on_after(timeout):
            await self._ready.wait()
        if not self._ready.is_set():
            raise LaunchFailed(f"opencode server {self.key} did not become ready in {timeout:g} s")
        attachment = Attachment(self, self.generation, self.settings.backlog)
        self.attachments.add(attachment)
        return attachment

    async def run(self, *, task_status: trio.TaskStatus[OpenCodeServer] = trio.TASK_STATUS_IGNORED) -> None:
        """One generation: spawn, find the URL, open the event stream, serve until it ends."""
        await load("supervisor.proc.child")  # off the event loop, with the first server
        from supervisor.proc.child import open_child

        from .http import HttpClient

        self.generation += 1
        password = secrets.token_urlsafe(24)
        spec = ProcessSpec(
            key=f"opencode:{self.key}:{self.generation}", kind=KIND, argv=self.launch.argv,
            cwd=self.launch.cwd, env={**self.launch.env, "OPENCODE_SERVER_PASSWORD": password},
            shutdown=self.settings.shutdown, framing="ndjson", frame_limit=self.settings.frame_limit,
            secrets=frozenset([*self.launch.env.values(), password]))
        status: ExitStatus | None = None
        try:
            async with open_child(spec, ledger=self.ledger) as child:
                try:
                    with trio.fail_after(self.settings.startup_timeout):
                        host, port = await _read_url(child)
                    self._client = HttpClient(host, port, password=password,
                                              limit=self.settings.frame_limit)
                    async with trio.open_nursery() as nursery:

                        async def pump(*, task_status: trio.TaskStatus[None]) -> None:
                            await self._pump(task_status=task_status)
                            nursery.cancel_scope.cancel()  # the stream ended: so does the run

                        nursery.start_soon(_drain, child)
                        await nursery.start(pump)
                        self.pid = child.pid
                        self._ready.set()
                        self._on_change()
                        task_status.started(self)
                        # The stream ends when the server dies (or shuts down): the generation is over.
                finally:
                    self._ready = trio.Event()
                    self.pid = None
                    with trio.CancelScope(shield=True):
                        status = await child.close()
                        if self._client is not None:
                            await self._client.aclose()
                            self._client = None
        except trio.TooSlowError:
            raise LaunchFailed(f"opencode server {self.key} printed no URL in "
                               f"{self.settings.startup_timeout:g} s") from None
        finally:
            self.last_exit = status
            for attachment in list(self.attachments):
                attachment.end(status)
            self.attachments.clear()
            self.routes.clear()
            self._on_change()
        raise ChildExited(f"opencode server {self.key} ended ({status})")

    async def _pump(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read the global event stream; route each event by its ``sessionID``."""
        from .http import HttpError  # loaded by ``run``

        client = self.client_or_raise()
        started = False
        try:
            async for data in client.events("/global/event"):
                kind, session_id, payload = _route(data)
                if not started and kind == "server.connected":
                    started = True
                    task_status.started()
                if session_id is not None and (attachment := self.routes.get(session_id)):
                    attachment.deliver(payload)
        except HttpError as exc:
            log.info("opencode server %s: event stream ended: %s", self.key, exc)
        if not started:
            raise LaunchFailed(f"opencode server {self.key} closed its event stream at once")


class _Props(msgspec.Struct, frozen=True):
    sessionID: str | None = None  # noqa: N815 - OpenCode's name


class _Event(msgspec.Struct, frozen=True):
    type: str = ""
    properties: _Props = _Props()


class _Global(msgspec.Struct, frozen=True):
    payload: msgspec.Raw = msgspec.Raw(b"null")


_EVENT = msgspec.json.Decoder(_Event)
_GLOBAL = msgspec.json.Decoder(_Global)


def _route(data: bytes) -> tuple[str, str | None, bytes]:
    """``(type, sessionID, event bytes)`` of one stream entry (``/global/event`` wraps each
    instance's event as ``{directory, payload}``); undecodable entries route nowhere."""
    try:
        wrapped = bytes(_GLOBAL.decode(data).payload)
        payload = data if wrapped == b"null" else wrapped
        event = _EVENT.decode(payload)
    except msgspec.DecodeError:
        return "", None, data
    return event.type, event.properties.sessionID, payload


async def _read_url(child: Any) -> tuple[str, int]:
    async for line in child.frames():
        found = _URL.search(line)
        if found:
            host = found.group(1).decode().strip("[]")
            return ("127.0.0.1" if host == "localhost" else host), int(found.group(2))
    raise LaunchFailed("opencode serve exited before it printed its URL")


async def _drain(child: Any) -> None:
    """Keep reading stdout so the server never blocks on a full pipe."""
    with contextlib.suppress(Exception):
        async for _ in child.frames():
            pass
