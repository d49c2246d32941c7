"""The placement policy, rule by rule: eligibility (alive, CPUs, ``node_resource``), the least
loaded node, ``wanted`` by id or IP (an IP shared by several nodes: the least loaded of them),
deterministic ties, the two refusals, and the shape of ``options.placement``."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from protocol.errors import BadRequest, PlacementNoNode, PlacementUnknownNode
from supervisor.placement.policy import NodeLoad, choose_node, eligible, wanted_node


def node(node_id: str, *, ip: str = "10.0.0.1", alive: bool = True, cpus: float = 4,
         children: int = 0, **resources: float) -> NodeLoad:
    return NodeLoad(node_id=node_id, node_ip=ip, alive=alive, cpus=cpus, resources=resources,
                    children=children)


def choose(nodes: list[NodeLoad], wanted: str | None = None, node_resource: str = "") -> str:
    return choose_node(nodes, wanted=wanted, node_resource=node_resource).node_id


def test_the_node_with_the_fewest_live_children_wins() -> None:
    nodes = [node("a", children=3), node("b", children=1), node("c", children=2)]
    assert choose(nodes) == "b"


def test_a_dead_node_is_never_chosen_however_idle() -> None:
    nodes = [node("a", children=5), node("b", alive=False, children=0)]
    assert choose(nodes) == "a"


def test_a_zero_cpu_head_hosts_nothing() -> None:
    head, worker = node("head", cpus=0), node("worker", children=9)
    assert choose([head, worker]) == "worker"
    with pytest.raises(PlacementNoNode, match="has CPUs"):
        choose_node([head], wanted=None, node_resource="")


def test_node_resource_limits_the_choice_to_the_nodes_offering_it() -> None:
    nodes = [node("a"), node("b", children=4, corral=2), node("c", children=1, corral=0),
             node("head", cpus=0, children=7, corral=1)]
    # With the resource set, CPUs do not matter: the zero-CPU head offering it is eligible.
    assert [n.node_id for n in eligible(nodes, node_resource="corral")] == ["b", "head"]
    assert choose(nodes, node_resource="corral") == "b"
    assert choose(nodes) == "a"  # without it, every alive node with CPUs


def test_ties_go_to_the_smallest_node_id_whatever_the_order() -> None:
    nodes = [node("c", children=1), node("a", children=1), node("b", children=1), node("d", children=2)]
    assert {choose(list(order)) for order in itertools.permutations(nodes)} == {"a"}


def test_wanted_names_a_node_by_id_even_when_it_is_the_busier() -> None:
    nodes = [node("a", ip="10.0.0.1", children=8), node("b", ip="10.0.0.2")]
    assert choose(nodes, wanted="a") == "a"


def test_wanted_names_nodes_by_ip_and_the_least_loaded_of_them_wins() -> None:
    # A one-machine cluster: two raylets share one IP.
    nodes = [node("a", ip="10.0.0.5", children=3), node("b", ip="10.0.0.5", children=1),
             node("c", ip="10.0.0.6")]
    assert choose(nodes, wanted="10.0.0.5") == "b"


def test_an_id_wins_over_an_ip_that_happens_to_read_the_same() -> None:
    nodes = [node("10.0.0.7", ip="10.0.0.1", children=5), node("x", ip="10.0.0.7")]
    assert choose(nodes, wanted="10.0.0.7") == "10.0.0.7"


def test_wanted_must_name_an_eligible_node() -> None:
    nodes = [node("a", ip="10.0.0.1"), node("dead", ip="10.0.0.2", alive=False),
             node("head", ip="10.0.0.3", cpus=0)]
    for wanted in ("nope", "dead", "10.0.0.2", "head"):
        with pytest.raises(PlacementUnknownNode) as caught:
            choose_node(nodes, wanted=wanted, node_resource="")
        assert "a (10.0.0.1)" in caught.value.message and repr(wanted) in caught.value.message
        assert caught.value.data == {"node": wanted}


def test_no_eligible_node_says_why() -> None:
    with pytest.raises(PlacementNoNode, match="none of the cluster's 0 node"):
        choose_node([], wanted=None, node_resource="")
    with pytest.raises(PlacementNoNode, match="none of the cluster's 1 node.* is alive"):
        choose_node([node("a", alive=False)], wanted=None, node_resource="")
    with pytest.raises(PlacementNoNode, match="offers the resource 'gpu'"):
        choose_node([node("a")], wanted=None, node_resource="gpu")
    # With no node at all, a wanted node is unknown (the list of those that could is empty).
    with pytest.raises(PlacementUnknownNode, match="these can: none"):
        choose_node([], wanted="a", node_resource="")


@pytest.mark.parametrize(("options", "expected"), [
    (None, None), ({}, None), ({"model": "x"}, None), ({"placement": {}}, None),
    ({"placement": {"node": None}}, None), ({"placement": {"node": "abc"}}, "abc"),
    ({"placement": {"node": " 10.0.0.5 "}}, "10.0.0.5"),
])
def test_options_placement_node(options: dict[str, Any] | None, expected: str | None) -> None:
    assert wanted_node(options) == expected


@pytest.mark.parametrize(("placement", "field"), [
    ("node-a", "options.placement"), (["a"], "options.placement"),
    ({"node": 3}, "options.placement.node"), ({"node": ""}, "options.placement.node"),
    ({"node": "  "}, "options.placement.node"), ({"node": ["a"]}, "options.placement.node"),
    ({"node": "a", "zone": "eu"}, "options.placement.zone"),
])
def test_a_bad_options_placement_is_a_bad_request_naming_the_field(placement: Any, field: str) -> None:
    with pytest.raises(BadRequest) as caught:
        wanted_node({"placement": placement})
    assert caught.value.data == {"field": field}
