"""The daemon's side of the Ray backend: the gateway as a supervised child, and remote children.

``RayPlacement.run`` is a permanent child of the daemon's root supervisor. It starts the gateway
(``python -m supervisor.placement.ray.gateway``, an ``open_child`` process with a ledger row and
the daemon's parent-death signal), waits for its ``ready`` line, connects to its Unix socket,
reconciles the agents (every child the cluster still runs for this state directory belongs to a
daemon that is gone, so each is killed and its row in the remote ledger dropped), and is then
started. It returns (and is restarted) when the gateway ends; every remote child then ends as
``lost``.

``RayPlacement.open(spec, ledger)`` has ``open_child``'s shape, so a session's harness spawns
through it unchanged (``actors.session.child``): it yields a ``RemoteChild`` with the same
``pid``/``send``/``frames``/``close`` as a ``ProcessChild``, framing the raw bytes the agent
relays with the spec's own framer (``supervisor.proc.pipes.framer_factory``), here in the daemon.
Its output is flow-controlled (``wire.OUTPUT_WINDOW``, ``Credit``): a session that does not read
holds at most the window and one batch here, and its child blocks on its node, as a local child
blocks on its pipe.
A child's *epoch* is its generation (the last part of the spec's key, ``session:ID:GEN``); the
frames of an epoch that is not running here (an agent that outlived its fence, a late batch) are
counted and dropped (``stale_dropped``).

This module never imports Ray: Ray lives in the gateway process.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import trio

from protocol.errors import (
    ChildExited,
    CorralError,
    LaunchFailed,
    PlacementNoNode,
    error_from_wire,
)
from protocol.framing import LengthPrefixFramer
from supervisor.placement.ray.remote_ledger import RemoteLedger, RemoteRow
from supervisor.placement.ray.remotechild import RemoteChild
from supervisor.placement.ray.wire import (
    Close,
    DaemonFrame,
    Exited,
    GatewayFrame,
    NodeList,
    Nodes,
    Output,
    Stderr,
    Reconcile,
    Reconciled,
    Spawn,
    Spawned,
    SpawnRefused,
    StopAgents,
    decode_gateway_frame,
    encode,
)
from supervisor.proc.child import ProcessSpec, open_child
from supervisor.proc.recorder import SpawnRecorder
from supervisor.proc.spec import ExitStatus

__all__ = ["RayPlacement"]

log = logging.getLogger("corral.placement")

SOURCE_ROOT = Path(__file__).resolve().parents[3]
"""The directory that holds ``supervisor``: the gateway's cwd, so ``-m`` finds this code (and
never ``/tmp``, where Ray's session folder would shadow the ``ray`` package)."""

READY_TIMEOUT = 120.0
"""Seconds the gateway may take to join the cluster and find its nodes."""

_REQUEST_TIMEOUT = 90.0


class RayPlacement:
    """The ``ray`` placement backend as the daemon holds it. See the module docstring."""

    def __init__(self, state_dir: str | Path, ledger: SpawnRecorder | None, *, address: str = "auto",
                 heartbeat_timeout: float = 5.0, node_resource: str = "",
                 namespace: str | None = None) -> None:
        self.state_dir = Path(state_dir)
        self.ledger = ledger
        self.address = address
        self.heartbeat_timeout = heartbeat_timeout
        self.node_resource = node_resource
        # Stable across daemons of one state directory: a restarted daemon finds its agents.
        digest = hashlib.sha256(str(self.state_dir.resolve()).encode()).hexdigest()[:16]
        self.namespace = namespace or f"corral-{digest}"
        self.remote_ledger = RemoteLedger(self.state_dir)
        self.children: dict[tuple[str, int], RemoteChild] = {}
        self.stale_dropped = 0
        self.reconciled: list[tuple[str, str, int, int]] = []
        self._stream: trio.SocketStream | None = None
        self._send_lock = trio.Lock()
        self._requests = itertools.count(1)
        self._waiting: dict[int, tuple[trio.Event, list[GatewayFrame]]] = {}
        self._abandoned: dict[int, DaemonFrame] = {}  # request id -> what to post if it answers
        self._connected = trio.Event()
        self._posts: trio.MemorySendChannel[DaemonFrame] | None = None

    # --- the supervised child ------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[RayPlacement] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the gateway until it ends (see the module docstring); cancelling stops every
        agent first (``corral stop`` leaves nothing on any node).

        Ready as soon as the gateway process runs, not once it joined the cluster: joining may
        take long, or never end while the cluster's head is unreachable (``ray.init`` retries),
        and a supervisor cannot interrupt a child's start, so a daemon stopping then would wait
        for it. Requests wait for the connection instead (``_request``)."""
        socket_path = self.state_dir / "placement.sock"
        socket_path.unlink(missing_ok=True)
        config = msgspec.json.encode({"address": self.address, "namespace": self.namespace,
                                      "heartbeat_timeout": self.heartbeat_timeout,
                                      "node_resource": self.node_resource}).decode()
        spec = ProcessSpec(key="placement-gateway", kind="placement-gateway",
                           argv=[sys.executable, "-m", "supervisor.placement.ray.gateway",
                                 str(socket_path), config],
                           cwd=str(SOURCE_ROOT), shutdown=5.0, framing="ndjson")
        try:
            async with open_child(spec, ledger=self.ledger) as gateway:
                task_status.started(self)
                with trio.fail_after(READY_TIMEOUT):
                    async for line in gateway.frames():
                        if line.strip() == b"ready":
                            break
                    else:
                        raise LaunchFailed(f"the Ray gateway ended before it was ready: "
                                           f"{' | '.join(gateway.stderr_tail()[-5:])}")
                stream = await trio.open_unix_socket(str(socket_path))
                posts, taken = trio.open_memory_channel[DaemonFrame](1024)
                async with stream, trio.open_nursery() as nursery:
                    self._stream = stream
                    self._posts = posts
                    nursery.start_soon(self._read, stream, nursery.cancel_scope)
                    nursery.start_soon(self._post_loop, taken)
                    # Spawns wait for the reconcile, which kills every child it finds: a session
                    # restarting after a gateway's death must not have its new child among them.
                    await self._boot_reconcile()
                    self._connected.set()
                    try:
                        await gateway.wait()
                    except trio.Cancelled:
                        if self._stream is not None:  # the daemon stops: so does every agent
                            with trio.move_on_after(10.0) as scope, contextlib.suppress(Exception):
                                scope.shield = True
                                await self.stop_agents()
                        raise
                    finally:
                        nursery.cancel_scope.cancel()
            raise ChildExited("the Ray gateway ended; its remote children are lost")
        finally:
            self._stream = None
            self._posts = None
            if self._connected.is_set():  # (one never set keeps its waiters for the next gateway)
                self._connected = trio.Event()
            for child in list(self.children.values()):
                child.end(ExitStatus(reason="lost"))
            self.children.clear()
            for event, _ in self._waiting.values():
                event.set()
            self._abandoned.clear()  # a new gateway's boot reconcile kills what they started

    async def _boot_reconcile(self) -> None:
        """Kill every child the cluster runs for this state directory (all of them belong to a
        daemon that is gone) and drop the remote ledger's rows."""
        rows = await trio.to_thread.run_sync(self.remote_ledger.load)
        answer = await self._ask(lambda i: Reconcile(id=i, keep=[]))
        if isinstance(answer, Reconciled):
            self.reconciled = answer.killed
            if answer.killed or rows:
                log.info("placement: %d remote child(ren) of a previous daemon killed (%d ledger rows)",
                         len(answer.killed), len(rows))
        await self.remote_ledger.clear()

    # --- what sessions use -------------------------------------------------------------------

    @asynccontextmanager
    async def open(self, spec: ProcessSpec, ledger: Any = None, *, node: str = "",
                   needs: Sequence[str] = ()) -> AsyncIterator[RemoteChild]:
        """``open_child`` for a session child on a node (``node``: an id or IP, ``""``: the
        policy's choice; ``needs``: programs besides ``spec.argv[0]`` the node must have, as a
        bridge needs the program it runs). Raises ``PlacementCwdMissing``, ``PlacementBinaryMissing`` (their
        messages name the node's id and IP), ``PlacementNoNode`` or ``LaunchFailed``. Leaving the block closes the child (bounded)."""
        session_id, epoch = _identity(spec)
        env = {k: v for k, v in spec.env.items()}
        answer = await self._request(lambda i: Spawn(
            id=i, session_id=session_id, epoch=epoch, argv=list(spec.argv), env=env, cwd=spec.cwd,
            shutdown=spec.shutdown, kind=spec.kind, node=node, secrets=sorted(spec.secrets),
            needs=list(needs)), abandon=Close(session_id=session_id, epoch=epoch, brutal=True))
        if isinstance(answer, SpawnRefused):  # placement.cwd_missing, binary_missing, no_node...
            raise error_from_wire(answer.code, answer.message, {"node": node} if node else None)
        if not isinstance(answer, Spawned):
            raise LaunchFailed("the Ray gateway is gone")
        child = RemoteChild(self, spec, session_id, epoch, answer)
        self.children[(session_id, epoch)] = child
        row = RemoteRow(key=spec.key, session_id=session_id, epoch=epoch, node_id=answer.node_id,
                        node_ip=answer.node_ip, agent_pid=answer.agent_pid, pid=answer.pid,
                        create_time=answer.create_time, start_ticks=answer.start_ticks,
                        boot_id=answer.boot_id)
        try:
            with trio.CancelScope(shield=True):
                await self.remote_ledger.add(row)
            yield child
        finally:
            with trio.CancelScope(shield=True):
                await child.close()
                self.children.pop((session_id, epoch), None)
                await self.remote_ledger.forget(spec.key)

    async def nodes(self, *, wait: bool = True) -> NodeList | None:
        """The cluster's nodes with their agents and children; ``None`` without a gateway
        (``wait=False``: at once, when it is not connected now)."""
        if not wait and not self._connected.is_set():
            return None
        answer = await self._request(lambda i: Nodes(id=i))
        return answer if isinstance(answer, NodeList) else None

    async def stop_agents(self) -> list[tuple[str, str, int, int]]:
        """Kill every child on every node and end the agents."""
        if self._stream is None:
            return []
        answer = await self._ask(lambda i: StopAgents(id=i))
        return answer.killed if isinstance(answer, Reconciled) else []

    # --- the gateway connection ----------------------------------------------------------------

    async def _request(self, make: Callable[[int], DaemonFrame], *,
                       abandon: DaemonFrame | None = None) -> GatewayFrame | None:
        """``_ask`` once the gateway is connected and reconciled; ``PlacementNoNode`` when it
        is not within ``_REQUEST_TIMEOUT`` (the cluster's head unreachable, say). Cancellable
        throughout (a stopping daemon does not wait for a cluster that does not answer)."""
        with trio.move_on_after(_REQUEST_TIMEOUT):
            await self._connected.wait()
        if not self._connected.is_set():
            raise PlacementNoNode(f"the Ray gateway has not joined the cluster at {self.address} "
                                  f"in {_REQUEST_TIMEOUT:g} s: is its head reachable?",
                                  data={"nodes": 0})
        return await self._ask(make, abandon=abandon)

    async def _ask(self, make: Callable[[int], DaemonFrame], *,
                   abandon: DaemonFrame | None = None) -> GatewayFrame | None:
        """Send the request ``make(id)`` and wait for its answer (``None``: the gateway went).
        A request given up before its answer (cancelled, timed out) has ``abandon`` posted
        when a ``Spawned`` answers it late: the child nobody waits for is closed."""
        request = next(self._requests)
        event, box = trio.Event(), list[GatewayFrame]()
        self._waiting[request] = (event, box)
        try:
            await self.send_frame(make(request))
            with trio.fail_after(_REQUEST_TIMEOUT):
                await event.wait()
        finally:
            del self._waiting[request]
            if not box and abandon is not None and self._stream is not None:
                self._abandoned[request] = abandon
        return box[0] if box else None

    async def send_frame(self, frame: DaemonFrame) -> None:
        stream = self._stream
        if stream is None:
            raise ChildExited("the Ray gateway is gone")
        payload = encode(frame)
        async with self._send_lock:
            await stream.send_all(len(payload).to_bytes(4, "big") + payload)

    def post_frame(self, frame: DaemonFrame) -> None:
        if self._posts is not None:
            with contextlib.suppress(trio.WouldBlock, trio.ClosedResourceError):
                self._posts.send_nowait(frame)

    async def _post_loop(self, taken: trio.MemoryReceiveChannel[DaemonFrame]) -> None:
        async for frame in taken:
            with contextlib.suppress(CorralError, trio.BrokenResourceError, trio.ClosedResourceError):
                await self.send_frame(frame)

    async def _read(self, stream: trio.SocketStream, scope: trio.CancelScope) -> None:
        framer = LengthPrefixFramer(64 * 1024 * 1024)
        try:
            while True:
                data = await stream.receive_some(256 * 1024)
                if not data:
                    break
                framer.receive_data(data)
                for payload in framer.frames():
                    self._route(decode_gateway_frame(payload))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        self._stream = None  # the gateway is gone: requests fail at once, nothing is stopped
        for event, _ in self._waiting.values():
            event.set()
        scope.cancel()

    def _route(self, frame: GatewayFrame) -> None:
        match frame:
            case Output(session_id=sid, epoch=epoch, data=data):
                child = self.children.get((sid, epoch))
                if child is None or child.status is not None:
                    self.stale_dropped += 1
                    return
                child.feed(data)
            case Stderr(session_id=sid, epoch=epoch, lines=lines):
                child = self.children.get((sid, epoch))
                if child is None or child.status is not None:
                    self.stale_dropped += 1
                    return
                child.add_stderr(lines)
            case Exited(session_id=sid, epoch=epoch, reason=reason, exit_code=code, signal=sig):
                child = self.children.get((sid, epoch))
                if child is None:
                    self.stale_dropped += 1
                    return
                child.end(ExitStatus(reason=reason, exit_code=code, signal=sig))
            case Spawned(id=request) | SpawnRefused(id=request) | NodeList(id=request) | Reconciled(id=request):
                waiting = self._waiting.get(request)
                if waiting is not None:
                    waiting[1].append(frame)
                    waiting[0].set()
                    return
                abandon = self._abandoned.pop(request, None)
                if abandon is not None and isinstance(frame, Spawned):
                    self.post_frame(abandon)


def _identity(spec: ProcessSpec) -> tuple[str, int]:
    """``(session_id, epoch)`` from a session child's key ``session:ID:GEN``."""
    head, _, gen = spec.key.rpartition(":")
    session_id = head.removeprefix("session:")
    try:
        return session_id, int(gen)
    except ValueError:
        return spec.key, 1

