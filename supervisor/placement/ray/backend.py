"""``RayBackend``: the ``ray`` placement backend behind the daemon's seam (``PlacementBackend``).

It answers ``placement.status`` and the create-time ``place`` check from the gateway's view of
the cluster (``client.RayPlacement.nodes``, through the pure policy), hands sessions its
``open`` (``open_child``'s shape, placing each child by the same policy on the node), and is the
daemon's supervised ``placement`` child (``child_spec``). Importing it imports no Ray.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from protocol.errors import PlacementNoNode
from protocol.messages import PlacementStatus
from protocol.models import ChildProcess, NodeStatus
from supervisor.placement.config import PlacementConfig
from supervisor.placement.policy import NodeLoad, choose_node
from supervisor.placement.ray.client import RayPlacement
from supervisor.placement.ray.remotechild import RemoteChild
from supervisor.proc.recorder import SpawnRecorder
from supervisor.proc.spec import ProcessSpec

__all__ = ["RayBackend"]


class RayBackend:
    """See the module docstring. ``sessions_of`` counts the open sessions placed on a node."""

    backend = "ray"

    def __init__(self, config: PlacementConfig, state_dir: str | Path, ledger: SpawnRecorder | None,
                 *, sessions_of: Callable[[str], int] | None = None) -> None:
        self.config = config
        self.engine = RayPlacement(state_dir, ledger, address=config.address,
                                   heartbeat_timeout=config.heartbeat_timeout,
                                   node_resource=config.node_resource)
        self._sessions_of = sessions_of or (lambda node_id: 0)

    async def status(self) -> PlacementStatus:
        listed = await self.engine.nodes(wait=False)  # no node while the gateway (re)joins
        nodes = [] if listed is None else [
            NodeStatus(node_id=n.node_id, node_ip=n.node_ip, alive=n.alive, agent_pid=n.agent_pid,
                       children=len(n.children), sessions=len({s for s, _ in n.children}))
            for n in listed.nodes]
        return PlacementStatus(backend=self.backend, address=self.config.address, nodes=nodes)

    def children(self) -> list[ChildProcess]:
        """The remote children as ``daemon.status`` lists them: pids of their nodes, with
        ``node_id``."""
        return [ChildProcess(key=c.key, kind=c.spec.kind, pid=c.pid, node_id=c.node_id)
                for c in self.engine.children.values() if c.status is None]

    async def place(self, wanted: str | None) -> NodeLoad:
        """The node the policy picks now (``PlacementUnknownNode``/``PlacementNoNode``)."""
        return choose_node(await self._loads(), wanted=wanted, node_resource=self.config.node_resource)

    @asynccontextmanager
    async def open(self, spec: ProcessSpec, ledger: Any = None, *, node: str = "",
                   needs: Sequence[str] = ()) -> AsyncIterator[RemoteChild]:
        """A session child on the node the policy picks (``node``: the one the session named);
        ``needs``: programs besides ``spec.argv[0]`` that must be found on that node."""
        chosen = await self.place(node or None)
        async with self.engine.open(spec, ledger, node=chosen.node_id, needs=needs) as child:
            yield child

    async def _loads(self) -> list[NodeLoad]:
        listed = await self.engine.nodes()
        if listed is None:
            raise PlacementNoNode("the Ray gateway is not running", data={"nodes": 0})
        return [NodeLoad(node_id=n.node_id, node_ip=n.node_ip, alive=n.alive and n.agent_pid is not None,
                         cpus=n.cpus, resources=n.resources, children=len(n.children))
                for n in listed.nodes]
