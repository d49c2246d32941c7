"""The placement policy, sans-IO: which node a new session child goes to.

A node is eligible when it is alive and has CPUs (a zero-CPU head hosts nothing), or, when
``[placement] node_resource`` is set, when it is alive and offers that custom resource. Of the
eligible nodes the one with the fewest live corral children wins; ``options.placement.node``
(``wanted``) narrows the choice to the node with that id, or to the nodes with that IP (several
nodes of a one-machine cluster share one). Ties go to the smallest node id, so the same loads
always give the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct

from protocol.errors import BadRequest, PlacementNoNode, PlacementUnknownNode

__all__ = ["NodeLoad", "choose_node", "eligible", "wanted_node"]


class NodeLoad(Struct, frozen=True, kw_only=True):
    """What the policy knows of a node: its identity, liveness, what it offers (``cpus``, the
    custom ``resources`` by name) and how many live corral children it runs now."""

    node_id: str
    node_ip: str
    alive: bool
    cpus: float
    resources: dict[str, float] = {}
    children: int = 0


def choose_node(nodes: Sequence[NodeLoad], *, wanted: str | None, node_resource: str) -> NodeLoad:
    """The node a new child goes to: the least loaded eligible node, or of those ``wanted``
    names (an id, else an IP). ``PlacementUnknownNode`` when ``wanted`` names no eligible node,
    ``PlacementNoNode`` when no node is eligible at all."""
    fit = eligible(nodes, node_resource=node_resource)
    if wanted is not None:
        named = [n for n in fit if n.node_id == wanted] or [n for n in fit if n.node_ip == wanted]
        if not named:
            offered = ", ".join(f"{n.node_id} ({n.node_ip})" for n in _ordered(fit)) or "none"
            raise PlacementUnknownNode(
                f"options.placement.node {wanted!r} names no node that can host a session; "
                f"these can: {offered}", data={"node": wanted})
        fit = named
    if not fit:
        raise PlacementNoNode(_no_node(nodes, node_resource), data={"nodes": len(nodes)})
    return min(fit, key=lambda n: (n.children, n.node_id))


def eligible(nodes: Sequence[NodeLoad], *, node_resource: str) -> list[NodeLoad]:
    """The nodes that may host a session child: alive, and with CPUs (or offering
    ``node_resource`` when it is set)."""
    if node_resource:
        return [n for n in nodes if n.alive and n.resources.get(node_resource, 0) > 0]
    return [n for n in nodes if n.alive and n.cpus > 0]


def wanted_node(options: Mapping[str, Any] | None) -> str | None:
    """``session.create``'s ``options.placement.node`` (a node id or IP), or None when absent;
    ``BadRequest`` naming the field when it has another shape."""
    if not options or "placement" not in options:
        return None
    placement = options["placement"]
    if not isinstance(placement, Mapping):
        raise BadRequest("options.placement must be an object such as {\"node\": \"NODE_ID_OR_IP\"}",
                         data={"field": "options.placement"})
    unknown = sorted(str(key) for key in placement if key != "node")
    if unknown:
        raise BadRequest(f"options.placement takes only \"node\", not {', '.join(map(repr, unknown))}",
                         data={"field": f"options.placement.{unknown[0]}"})
    node = placement.get("node")
    if node is None:
        return None
    if not isinstance(node, str) or not node.strip():
        raise BadRequest("options.placement.node must be a node id or IP (a non-empty string)",
                         data={"field": "options.placement.node"})
    return node.strip()


def _ordered(nodes: Sequence[NodeLoad]) -> list[NodeLoad]:
    return sorted(nodes, key=lambda n: n.node_id)


def _no_node(nodes: Sequence[NodeLoad], node_resource: str) -> str:
    alive = [n for n in nodes if n.alive]
    if not alive:
        return f"no node can host a session: none of the cluster's {len(nodes)} node(s) is alive"
    if node_resource:
        return (f"no node can host a session: none of the {len(alive)} alive node(s) offers the "
                f"resource {node_resource!r} ([placement] node_resource)")
    return (f"no node can host a session: none of the {len(alive)} alive node(s) has CPUs "
            "(a zero-CPU head hosts nothing)")
