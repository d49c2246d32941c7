"""The Ray gateway: ``python -m supervisor.placement.ray.gateway SOCKET CONFIG_JSON``.

The one process of corral that holds a Ray driver (``ray.init``), so Ray's threads and GIL stay
out of the Trio daemon. The daemon runs it as a permanent supervised child and talks to it over
the Unix socket ``SOCKET`` in length-prefixed msgpack frames (``wire``). It prints ``ready`` on
stdout once it listens and has found the cluster's nodes.

Theory of operation (asyncio, one loop):

* Every second it lists the cluster's nodes (``ray.nodes()``, in a thread) and makes sure each
  eligible alive node — CPUs, or the ``node_resource`` when one is set; a zero-CPU head hosts
  nothing — has a node agent (``agent.NodeAgent``): a detached actor named after the node in
  the daemon's namespace, pinned by node affinity, ``max_restarts=0, max_task_retries=0``. A node
  that joins gets one at the next scan; an agent that outlived a daemon crash is found by name.
* Every agent gets a heartbeat a few times per ``heartbeat_timeout``. An agent that fails a call
  (``ActorDiedError`` and its kin) is *lost*: it never gets another heartbeat (so if its node
  only looked dead it kills its children by itself), each of its children's streams ends with
  ``Exited{reason: lost}``, and the next scan gives its node, if alive, a new agent.
* ``Spawn`` goes to the node asked for, or to the eligible node with the fewest live children
  (ties: the smallest node id); one task per child relays the agent's stream, a batch of raw
  bytes per Ray yield, as ``Output`` frames, then ``Exited``; it relays output only while the
  child has credit (``OutputCredit``, ``wire.Credit``) and lets the agent yield only
  ``_STREAM_AHEAD`` batches ahead, so a session that does not read stops its child. A batch
  comes with its value (``ray.get`` without a wait) unless it is large. ``Send`` is a call
  without a return (``num_returns=0``): nothing on a prompt's round trip waits for its answer,
  and an agent that died ends its children's streams.
* When the daemon's connection ends the gateway exits; the agents fence themselves if no
  gateway takes them over in time.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import uuid
from typing import Any

import msgspec

from supervisor.placement.ray.wire import (
    OUTPUT_WINDOW,
    Close,
    Credit,
    DaemonFrame,
    Exited,
    GatewayFrame,
    Node,
    NodeList,
    Nodes,
    Output,
    Stderr,
    Reconcile,
    Reconciled,
    Send,
    Spawn,
    Spawned,
    SpawnRefused,
    StopAgents,
    decode_daemon_frame,
    encode,
)

log = logging.getLogger("corral.placement.gateway")

SCAN_PERIOD = 1.0
"""Seconds between two looks at the cluster's nodes."""

_AGENT_START_TIMEOUT = 60.0
_STREAM_AHEAD = 2
"""Batches an agent's stream may yield before the gateway took them (Ray's generator
backpressure): the agent holds the rest, so a child whose output waits for credit blocks."""


class OutputCredit:
    """The bytes of one child's output the gateway may still relay (``wire.Credit``): it starts
    with ``OUTPUT_WINDOW``; ``spend`` takes a batch's size (one batch may overdraw it), ``wait``
    returns once some is left, ``grant`` gives back what the daemon's session took."""

    def __init__(self, window: int = OUTPUT_WINDOW) -> None:
        self.left = window
        self._more = asyncio.Event()

    def spend(self, size: int) -> None:
        self.left -= size

    def grant(self, size: int) -> None:
        self.left += size
        if self.left > 0:
            self._more.set()

    async def wait(self) -> None:
        while self.left <= 0:
            self._more.clear()
            await self._more.wait()


class GatewayConfig(msgspec.Struct, kw_only=True, frozen=True):
    """What the daemon passes on the command line (JSON)."""

    address: str = "auto"
    namespace: str = "corral"
    heartbeat_timeout: float = 5.0
    node_resource: str = ""


class _Agent:
    def __init__(self, node_id: str, handle: Any) -> None:
        self.node_id = node_id
        self.handle = handle
        # Stdin needs no answer (a dead agent ends its children's streams): no return object
        # to make, send back and resolve while the child's answer is on its way.
        self.send = handle.send.options(num_returns=0)
        self.pid: int | None = None
        self.node_ip = ""
        self.lost = False
        self.ready = asyncio.Event()


class Gateway:
    """See the module docstring."""

    def __init__(self, config: GatewayConfig) -> None:
        import ray

        self.ray = ray
        self.config = config
        self.owner = uuid.uuid4().hex
        self.nodes: dict[str, Node] = {}
        self.agents: dict[str, _Agent] = {}
        self.children: dict[tuple[str, int], str] = {}  # (session, epoch) -> node id
        self.relays: dict[tuple[str, int], asyncio.Task[None]] = {}
        self.credits: dict[tuple[str, int], OutputCredit] = {}
        self.writer: asyncio.StreamWriter | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._died = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)
        self._nodes_seen = asyncio.Event()

    # --- the cluster ------------------------------------------------------------------------

    async def watch(self) -> None:
        """Scan the nodes and keep the agents' heartbeat, forever: two loops, so a scan that
        hangs (the head's GCS is gone and ``ray.nodes()`` retries) stops no heartbeat, and the
        agents keep their children while their nodes live."""
        await asyncio.gather(self._scan_loop(), self._beat_loop())

    async def _scan_loop(self) -> None:
        while True:
            await self.scan()
            await asyncio.sleep(SCAN_PERIOD)

    async def _beat_loop(self) -> None:
        beat = min(1.0, self.config.heartbeat_timeout / 4)
        while True:
            for agent in list(self.agents.values()):
                if agent.ready.is_set() and not agent.lost:
                    self._spawn_task(self._beat(agent))
            await asyncio.sleep(beat)

    async def scan(self) -> None:
        """List the nodes; start an agent on each eligible node without one, lose the agents of
        nodes gone. A listing that fails (the GCS unreachable) keeps the last view."""
        try:
            raw = await asyncio.to_thread(self.ray.nodes)
        except Exception as exc:  # noqa: BLE001 (Ray raises many kinds; all mean "not now")
            log.warning("cannot list the cluster's nodes: %s", exc)
            return
        nodes: dict[str, Node] = {}
        for entry in raw:
            resources = {k: float(v) for k, v in (entry.get("Resources") or {}).items()}
            node_id = entry["NodeID"]
            nodes[node_id] = Node(node_id=node_id, node_ip=entry.get("NodeManagerAddress", ""),
                                  alive=bool(entry.get("Alive")), cpus=resources.get("CPU", 0.0),
                                  resources=resources)
        self.nodes = nodes
        for node in nodes.values():
            if node.alive and self._eligible(node) and node.node_id not in self.agents:
                self._start_agent(node)
        for node_id, agent in list(self.agents.items()):
            known = nodes.get(node_id)
            if known is None or not known.alive:
                self._lose(agent)
        self._nodes_seen.set()

    def _eligible(self, node: Node) -> bool:
        if self.config.node_resource:
            return node.resources.get(self.config.node_resource, 0.0) > 0
        return node.cpus > 0

    def _start_agent(self, node: Node) -> None:
        node_id = node.node_id
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from supervisor.placement.ray.agent import NodeAgent

        actor = self.ray.remote(NodeAgent).options(
            name=f"corral-agent-{node_id}", namespace=self.config.namespace, lifetime="detached",
            get_if_exists=True, max_restarts=0, max_task_retries=0, num_cpus=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False))
        agent = _Agent(node_id, actor.remote(self.config.heartbeat_timeout, self.owner, node.node_ip))
        self.agents[node_id] = agent
        self._spawn_task(self._greet(agent))

    async def _greet(self, agent: _Agent) -> None:
        try:
            await agent.handle.heartbeat.remote(self.owner)
            info = await asyncio.wait_for(agent.handle.info.remote(), _AGENT_START_TIMEOUT)
        except (TimeoutError, *self._died) as exc:
            log.warning("the agent of node %s did not start: %s", agent.node_id, exc)
            self._lose(agent)
            return
        agent.pid = info["pid"]
        agent.node_ip = info["node_ip"]
        agent.ready.set()

    async def _beat(self, agent: _Agent) -> None:
        try:
            await agent.handle.heartbeat.remote(self.owner)
        except self.ray.exceptions.ActorUnavailableError:
            pass  # for now (a busy or unreachable worker): the next beat, or the scan, decides
        except self._died:
            self._lose(agent)

    def _lose(self, agent: _Agent) -> None:
        if agent.lost:
            return
        agent.lost = True
        if self.agents.get(agent.node_id) is agent:
            del self.agents[agent.node_id]
        log.warning("lost the agent of node %s", agent.node_id)
        # Its children are lost now, whether or not Ray has told their streams yet (a node
        # declared dead may keep a stream open): each ends here, its stream abandoned.
        for key, node_id in list(self.children.items()):
            if node_id == agent.node_id:
                relay = self.relays.pop(key, None)
                if relay is not None:
                    relay.cancel()
                self.children.pop(key, None)
                self._write(Exited(session_id=key[0], epoch=key[1], reason="lost"))

    # --- the daemon's requests ----------------------------------------------------------------

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve the daemon's connection; the gateway exits when it ends."""
        self.writer = writer
        try:
            while True:
                head = await reader.readexactly(4)
                frame = decode_daemon_frame(await reader.readexactly(int.from_bytes(head, "big")))
                self._dispatch(frame)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            os._exit(0)

    def _dispatch(self, frame: DaemonFrame) -> None:
        match frame:
            case Spawn():
                self._spawn_task(self._spawn(frame))
            case Send(session_id=sid, epoch=epoch, data=data):
                agent = self._agent_of(sid, epoch)
                if agent is not None:
                    agent.send.remote(sid, epoch, data)
            case Close(session_id=sid, epoch=epoch, brutal=brutal):
                agent = self._agent_of(sid, epoch)
                if agent is not None:
                    self._spawn_task(self._call(agent, agent.handle.close.remote(sid, epoch, brutal)))
            case Credit(session_id=sid, epoch=epoch, size=size):
                credit = self.credits.get((sid, epoch))
                if credit is not None:
                    credit.grant(size)
            case Nodes(id=request):
                self._write(NodeList(id=request, address=self.config.address, nodes=self._node_list()))
            case Reconcile(id=request, keep=keep):
                self._spawn_task(self._reconcile(request, keep, stop=False))
            case StopAgents(id=request):
                self._spawn_task(self._reconcile(request, [], stop=True))

    async def _spawn(self, frame: Spawn) -> None:
        agent = await self._place(frame.node)
        if agent is None:
            self._write(SpawnRefused(id=frame.id, code="placement.no_node",
                                     message=self._no_node_message(frame.node)))
            return
        key = (frame.session_id, frame.epoch)
        try:
            started = await agent.handle.spawn.remote(frame.session_id, frame.epoch, frame.argv,
                                                      frame.env, frame.cwd, frame.shutdown, frame.kind,
                                                      frame.secrets, frame.needs)
        except self._died as exc:
            self._lose(agent)
            self._write(SpawnRefused(id=frame.id, code="launch_failed",
                                     message=f"the agent of node {agent.node_id} died: {type(exc).__name__}"))
            return
        if "code" in started:
            self._write(SpawnRefused(id=frame.id, code=started["code"], message=started["message"]))
            return
        self.children[key] = agent.node_id
        self._write(Spawned(id=frame.id, node_id=agent.node_id, node_ip=agent.node_ip,
                            agent_pid=agent.pid or 0, pid=started["pid"],
                            create_time=started["create_time"], start_ticks=started["start_ticks"],
                            boot_id=started["boot_id"]))
        self.relays[key] = self._spawn_task(self._relay(agent, frame.session_id, frame.epoch))

    async def _place(self, wanted: str) -> _Agent | None:
        """The agent of the node ``wanted`` names (id or IP), else of the least loaded node."""
        await self._nodes_seen.wait()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _AGENT_START_TIMEOUT
        while True:
            ready = [a for a in self.agents.values() if a.ready.is_set() and not a.lost]
            if wanted:
                ready = ([a for a in ready if a.node_id == wanted]
                         or [a for a in ready if a.node_ip == wanted])
            if ready:
                load = {a.node_id: 0 for a in ready}
                for node_id in self.children.values():
                    if node_id in load:
                        load[node_id] += 1
                return min(ready, key=lambda a: (load[a.node_id], a.node_id))
            starting = [a for a in self.agents.values() if not a.ready.is_set() and not a.lost]
            if not starting or loop.time() > deadline:
                return None
            await asyncio.sleep(0.05)

    def _no_node_message(self, wanted: str) -> str:
        if wanted:
            return f"no live node {wanted!r} can host a session child"
        return f"no node of the cluster can host a session child ({len(self.nodes)} nodes known)"

    async def _relay(self, agent: _Agent, session_id: str, epoch: int) -> None:
        key = (session_id, epoch)
        credit = self.credits[key] = OutputCredit()
        stream = agent.handle.stream.options(_generator_backpressure_num_objects=_STREAM_AHEAD)
        try:
            async for ref in stream.remote(session_id, epoch):
                try:  # the item came with its value (a small batch): no second wait on the loop
                    item = self.ray.get(ref, timeout=0)
                except self.ray.exceptions.GetTimeoutError:
                    item = await ref  # a large batch, in the object store of the agent's node
                if isinstance(item, bytes):
                    self._write(Output(session_id=session_id, epoch=epoch, data=item))
                    credit.spend(len(item))
                    if self.writer is not None:
                        await self.writer.drain()
                    await credit.wait()  # the next batch waits in the agent, its child on its pipe
                elif isinstance(item, list):
                    self._write(Stderr(session_id=session_id, epoch=epoch, lines=item))
                else:
                    reason, code, sig = item
                    self._write(Exited(session_id=session_id, epoch=epoch, reason=reason,
                                       exit_code=code, signal=sig))
                    return
            self._write(Exited(session_id=session_id, epoch=epoch, reason="lost"))
        except self._died:
            self._lose(agent)  # ends this child too, with every other child of the agent
        finally:
            if self.relays.get(key) is asyncio.current_task():
                del self.relays[key]
                self.children.pop(key, None)
                self.credits.pop(key, None)

    async def _call(self, agent: _Agent, ref: Any) -> None:
        try:
            await ref
        except self._died:
            self._lose(agent)

    async def _reconcile(self, request: int, keep: list[tuple[str, int]], *, stop: bool) -> None:
        killed: list[tuple[str, str, int, int]] = []
        for agent in list(self.agents.values()):
            try:
                await asyncio.wait_for(agent.ready.wait(), _AGENT_START_TIMEOUT)
                if stop:
                    await agent.handle.reconcile.remote([])
                    rows = await agent.handle.stop.remote()
                    self._lose(agent)
                    killed.append((agent.node_id, "", 0, rows))
                else:
                    rows = await agent.handle.reconcile.remote([list(k) for k in keep])
                    killed.extend((agent.node_id, s, e, p) for s, e, p in rows)
            except (TimeoutError, *self._died):
                self._lose(agent)
        self._write(Reconciled(id=request, killed=killed))

    def _node_list(self) -> list[Node]:
        out = []
        for node in self.nodes.values():
            agent = self.agents.get(node.node_id)
            children = [k for k, n in self.children.items() if n == node.node_id]
            out.append(msgspec.structs.replace(
                node, agent_pid=agent.pid if agent is not None else None, children=children))
        return out

    def _agent_of(self, session_id: str, epoch: int) -> _Agent | None:
        node_id = self.children.get((session_id, epoch))
        return None if node_id is None else self.agents.get(node_id)

    def _write(self, frame: GatewayFrame) -> None:
        if self.writer is not None:
            payload = encode(frame)
            self.writer.write(len(payload).to_bytes(4, "big") + payload)

    def _spawn_task(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


async def _main(socket_path: str, config: GatewayConfig) -> None:
    import ray

    ray.init(address=config.address, namespace=config.namespace, log_to_driver=False,
             logging_level=logging.WARNING, configure_logging=False)
    gateway = Gateway(config)
    watcher = asyncio.get_running_loop().create_task(gateway.watch())
    await gateway._nodes_seen.wait()
    with _quiet_umask():
        server = await asyncio.start_unix_server(gateway.serve, path=socket_path)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    async with server:
        await asyncio.gather(server.serve_forever(), watcher)


class _quiet_umask:
    """The socket is the daemon's alone (mode 0600)."""

    def __enter__(self) -> None:
        self._old = os.umask(0o177)

    def __exit__(self, *exc: object) -> None:
        os.umask(self._old)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    socket_path, raw = args
    config = msgspec.json.decode(raw.encode(), type=GatewayConfig)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(_main(socket_path, config))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
