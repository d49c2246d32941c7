"""The Ray engine against a real loopback cluster: gateway, node agents, remote children.

Driven from the daemon's side (``RayPlacement``) without a daemon: a remote child is spawned,
talked to and closed through the same calls a session's harness makes.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import psutil
import pytest
import trio

from protocol.errors import PlacementBinaryMissing, PlacementCwdMissing
from supervisor.placement.ray.client import RayPlacement
from supervisor.proc.spec import ProcessSpec
from tests.raycluster import RayCluster

pytestmark = pytest.mark.slow

ECHO = [sys.executable, "-u", "-c",
        "import sys\nfor line in sys.stdin:\n    sys.stdout.write('echo ' + line)\n    sys.stdout.flush()"]


@pytest.fixture
async def placement(ray_cluster: RayCluster, tmp_path: object) -> AsyncIterator[RayPlacement]:
    backend = RayPlacement(str(tmp_path), None, address=ray_cluster.address, heartbeat_timeout=3.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(backend.run)
        yield backend
        nursery.cancel_scope.cancel()


def _spec(session: str, gen: int, argv: list[str] = ECHO, cwd: str | None = None) -> ProcessSpec:
    return ProcessSpec(key=f"session:{session}:{gen}", kind="harness:test", argv=argv, cwd=cwd,
                       shutdown=2.0)


async def test_a_remote_child_echoes_and_closes(placement: RayPlacement) -> None:
    with trio.fail_after(60):
        async with placement.open(_spec("s1", 1)) as child:
            await child.send(b"hello\n")
            frames = child.frames()
            assert await frames.__anext__() == b"echo hello"
            assert child.node_id and child.node_ip
            assert psutil.pid_exists(child.pid)
            status = await child.close()
        assert status.reason in ("exited", "killed")
        assert not psutil.pid_exists(child.pid) or psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE


async def test_children_spread_over_both_nodes(placement: RayPlacement, ray_cluster: RayCluster) -> None:
    with trio.fail_after(60):
        async with placement.open(_spec("a", 1)) as one, placement.open(_spec("b", 1)) as two:
            assert one.node_id != two.node_id
            listed = await placement.nodes()
            assert listed is not None
            hosting = {n.node_id: n.children for n in listed.nodes if n.children}
            assert hosting == {one.node_id: [("a", 1)], two.node_id: [("b", 1)]}


async def test_missing_cwd_and_binary_name_the_node(placement: RayPlacement, tmp_path: object) -> None:
    with trio.fail_after(60):
        with pytest.raises(PlacementCwdMissing) as cwd:
            async with placement.open(_spec("c", 1, cwd="/nonexistent/corral-cwd")):
                pass
        with pytest.raises(PlacementBinaryMissing) as binary:
            async with placement.open(_spec("c", 2, argv=["corral-no-such-binary"])):
                pass
        listed = await placement.nodes()
        assert listed is not None
        named = [n for n in listed.nodes if n.node_id in binary.value.message]
        assert len(named) == 1 and f"({named[0].node_ip})" in binary.value.message
