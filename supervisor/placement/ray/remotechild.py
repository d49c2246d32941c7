"""A session child that runs under a node agent: ``RemoteChild``, with ``ProcessChild``'s interface.

The session's harness cannot tell it from a local child (``actors.session.child``): the same
``pid``/``send``/``frames``/``close``, the raw bytes the agent relays framed here with the spec's
own framer. Its output is flow-controlled: it hands the gateway a ``Credit`` as the session takes
the bytes, so at most ``wire.OUTPUT_WINDOW`` and one batch wait here. ``RayPlacement``
(``client``) routes the gateway's frames to it (``feed``, ``add_stderr``, ``end``) and carries
what it sends (``Outbox``).
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Protocol

import trio

from protocol.errors import ChildExited, FrameTooLarge, ProtocolError
from protocol.models import Placement
from supervisor.placement.ray.wire import OUTPUT_WINDOW, Close, Credit, DaemonFrame, Send, Spawned
from supervisor.proc.child import Goodbye, ProcessSpec
from supervisor.proc.pipes import FrameIterator, framer_factory
from supervisor.proc.spec import ExitStatus, redact

__all__ = ["Outbox", "RemoteChild"]

child_log = logging.getLogger("corral.child")  # a remote child's stderr, as a local child's

_LOST_MARGIN = 5.0
"""Seconds past a child's shutdown a close waits for the agent before it counts the child lost."""


class Outbox(Protocol):
    """Where a remote child's frames to the gateway go (``RayPlacement``)."""

    async def send_frame(self, frame: DaemonFrame) -> None:
        """Send ``frame`` now (waits for the socket)."""

    def post_frame(self, frame: DaemonFrame) -> None:
        """Queue ``frame`` to be sent (from code that cannot wait)."""


class RemoteChild:
    """A session child running under a node agent; ``supervisor.proc.ProcessChild``'s interface.

    ``pid`` is its pid on its node, ``node_id``/``node_ip``/``agent_pid`` where it runs,
    ``epoch`` its generation. ``status`` is set once it ended (``reason="lost"`` when its agent,
    node or gateway was lost).
    """

    def __init__(self, outbox: Outbox, spec: ProcessSpec, session_id: str, epoch: int,
                 spawned: Spawned) -> None:
        self.spec = spec
        self.key = spec.key
        self.session_id = session_id
        self.epoch = epoch
        self.pid = spawned.pid
        self.node_id = spawned.node_id
        self.node_ip = spawned.node_ip
        self.agent_pid = spawned.agent_pid
        self.status: ExitStatus | None = None
        self.failure: FrameTooLarge | ProtocolError | None = None
        self._outbox = outbox
        self._framer = framer_factory(spec)()
        self._chunks: collections.deque[bytes] = collections.deque()
        self.buffered = 0
        """Bytes relayed from the node that the session has not taken yet (the flow control
        keeps them within ``wire.OUTPUT_WINDOW`` and one batch)."""
        self._taken = 0  # taken since the last ``Credit``
        self._arrived = trio.Event()
        self._ended = trio.Event()
        self._eof = False
        self._close_asked = False
        self._stderr: collections.deque[str] = collections.deque(maxlen=spec.stderr_lines)

    async def send(self, data: bytes) -> None:
        """Write ``data`` to the child's stdin (through the gateway); ``ChildExited`` once it ended."""
        if self.status is not None:
            raise ChildExited(f"child {self.key!r} no longer reads its stdin", data={"pid": self.pid})
        await self._outbox.send_frame(Send(session_id=self.session_id, epoch=self.epoch, data=data))

    async def receive_frame(self) -> bytes:
        """The next stdout frame (as ``ProcessChild.receive_frame``): ``trio.EndOfChannel`` at
        the end, the framing error that stopped the child after the intact frames before it."""
        while True:
            frame = self._framer.next_frame()
            if frame is not None:
                return frame
            if self._chunks:
                chunk = self._chunks.popleft()
                self._framer.receive_data(chunk)
                self._took(len(chunk))
                continue
            if self._ended.is_set():
                if not self._eof:
                    self._eof = True
                    self._framer.eof()
                    continue
                raise trio.EndOfChannel
            self._arrived = trio.Event()
            await self._arrived.wait()

    def frames(self) -> AsyncIterator[bytes]:
        return FrameIterator(self.receive_frame)

    @property
    def placement(self) -> Placement:
        """Where it runs, as sessions report it."""
        return Placement(backend="ray", node_id=self.node_id, node_ip=self.node_ip, epoch=self.epoch)

    def stderr_tail(self) -> list[str]:
        """The last ``spec.stderr_lines`` lines the child wrote to stderr, oldest first."""
        return list(self._stderr)

    def kill_group(self) -> None:
        """SIGKILL the child's group and family on its node."""
        self._outbox.post_frame(Close(session_id=self.session_id, epoch=self.epoch, brutal=True))

    async def wait(self) -> ExitStatus:
        await self._ended.wait()
        return self._final_status()

    async def close(self, goodbye: Goodbye | None = None) -> ExitStatus:
        """The close sequence, run on the node: ``goodbye`` (here), then stdin closed, SIGTERM
        and SIGKILL within ``spec.shutdown``; the status once the agent reaped it. Shielded and
        bounded: a node that does not answer within the shutdown and a margin is counted lost."""
        with trio.CancelScope(shield=True):
            if not self._ended.is_set() and not self._close_asked:
                self._close_asked = True
                if goodbye is not None:
                    with trio.move_on_after(self.spec.shutdown), contextlib.suppress(Exception):
                        await goodbye(self)  # type: ignore[arg-type]
                with contextlib.suppress(Exception):
                    await self._outbox.send_frame(Close(session_id=self.session_id, epoch=self.epoch))
            with trio.move_on_after(self.spec.shutdown + _LOST_MARGIN):
                await self._ended.wait()
            if not self._ended.is_set():
                self.end(ExitStatus(reason="lost"))
        return self._final_status()

    def feed(self, data: bytes) -> None:
        """Output bytes the agent relayed for this child."""
        self._chunks.append(data)
        self.buffered += len(data)
        self._arrived.set()

    def _took(self, size: int) -> None:
        """The session took ``size`` bytes: give them back to the gateway once they make half
        the window (one ``Credit`` per half window, not one per batch)."""
        self.buffered -= size
        self._taken += size
        if self._taken >= OUTPUT_WINDOW // 2 and self.status is None:
            self._outbox.post_frame(Credit(session_id=self.session_id, epoch=self.epoch, size=self._taken))
            self._taken = 0

    def add_stderr(self, lines: list[str]) -> None:
        """Stderr lines the agent relayed (masked there), logged and kept for ``stderr_tail``."""
        for line in lines:  # masked on the node; again here, with this side's secrets
            line = redact(line, self.spec.secrets)
            self._stderr.append(line)
            child_log.info("[%s %d] %s", self.key, self.pid, line)

    def end(self, status: ExitStatus) -> None:
        """It ended (or was lost): ``status``, once; wakes its reader and its waiters."""
        if self.status is None:
            self.status = status
        self._ended.set()
        self._arrived.set()

    def _final_status(self) -> ExitStatus:
        return self.status or ExitStatus(reason="lost")
