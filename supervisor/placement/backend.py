"""The placement seam: what the daemon asks of a backend, and the ``local`` backend.

A backend answers ``placement.status`` (``status``) and picks the node of a new session child
(``place``, by the pure policy of ``policy``). ``LocalPlacement`` is today's behaviour: one node,
this machine, whose agent is the daemon itself; a ``ray`` backend lists the cluster's nodes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol

from protocol.messages import PlacementStatus
from protocol.models import NodeStatus

from supervisor.placement.policy import NodeLoad, choose_node

__all__ = ["LOCAL_NODE_ID", "LOCAL_NODE_IP", "LocalPlacement", "PlacementBackend"]

LOCAL_NODE_ID = "local"
"""The one node of the ``local`` backend (``options.placement.node`` may name it, or its IP)."""
LOCAL_NODE_IP = "127.0.0.1"


class PlacementBackend(Protocol):
    """Where session children run, as the daemon sees it."""

    @property
    def backend(self) -> str:
        """Its name in ``[placement] backend``, ``placement.status`` and ``Placement.backend``."""
        ...

    async def status(self) -> PlacementStatus:
        """The backend, the address it joined and every node it knows, with its load."""
        ...

    async def place(self, wanted: str | None) -> NodeLoad:
        """The node a new child of a session goes to, by ``policy.choose_node`` (``wanted``:
        the session's ``options.placement.node``); ``PlacementUnknownNode`` or
        ``PlacementNoNode`` when there is none."""
        ...


class LocalPlacement:
    """The ``local`` backend: every child runs on the daemon's machine, one node named
    ``local`` whose agent is the daemon (``agent_pid`` its pid).

    ``children`` and ``sessions`` count, when asked, the daemon's live children (every process
    its crash ledger holds) and its open sessions.
    """

    backend = "local"

    def __init__(self, *, children: Callable[[], int], sessions: Callable[[], int]) -> None:
        self._children = children
        self._sessions = sessions

    async def status(self) -> PlacementStatus:
        node = NodeStatus(node_id=LOCAL_NODE_ID, node_ip=LOCAL_NODE_IP, alive=True,
                          agent_pid=os.getpid(), children=self._children(),
                          sessions=self._sessions())
        return PlacementStatus(backend=self.backend, address=None, nodes=[node])

    async def place(self, wanted: str | None) -> NodeLoad:
        """The local node, also when ``wanted`` names it; any other name is unknown here."""
        node = NodeLoad(node_id=LOCAL_NODE_ID, node_ip=LOCAL_NODE_IP, alive=True,
                        cpus=float(os.cpu_count() or 1), children=self._children())
        return choose_node([node], wanted=wanted, node_resource="")
