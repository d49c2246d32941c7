"""The Ray engine against a real loopback cluster: gateway, node agents, remote children.

Driven from the daemon's side (``RayPlacement``) without a daemon: a remote child is spawned,
talked to and closed through the same calls a session's harness makes.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator

import psutil
import pytest
import trio

from protocol.errors import ChildExited, PlacementBinaryMissing, PlacementCwdMissing
from supervisor.placement.ray.agent import BATCH_LIMIT
from supervisor.placement.ray.client import RayPlacement
from supervisor.placement.ray.wire import OUTPUT_WINDOW
from supervisor.proc.identity import boot_id
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
            (row,) = placement.remote_ledger.rows()  # on disk before the child was handed over
            assert (row.session_id, row.epoch, row.pid, row.node_id) == ("s1", 1, child.pid, child.node_id)
            assert row.boot_id == boot_id() and row.agent_pid == child.agent_pid
            assert psutil.pid_exists(child.pid)
            status = await child.close()
        assert status.reason in ("exited", "killed")
        assert placement.remote_ledger.rows() == []
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
        with pytest.raises(PlacementBinaryMissing) as needed:  # what a bridge runs (OpenCode's)
            async with placement.open(_spec("c", 3), needs=["corral-no-such-tool"]):
                pass
        listed = await placement.nodes()
        assert listed is not None
        for refused in (cwd.value, binary.value, needed.value):
            named = [n for n in listed.nodes if n.node_id in refused.message]
            assert len(named) == 1 and f"({named[0].node_ip})" in refused.message
        assert "/nonexistent/corral-cwd" in cwd.value.message
        assert "corral-no-such-binary" in binary.value.message
        assert "corral-no-such-tool" in needed.value.message


GRANDPARENT = [sys.executable, "-u", "-c",
               ("import subprocess, sys\n"
                "p = subprocess.Popen(['sleep', '301'], start_new_session=True)\n"
                "print(p.pid, flush=True)\n"
                "sys.stdin.read()")]


def _gone(pids: list[int], timeout: float) -> list[int]:
    """The pids still alive (not zombies) after up to ``timeout`` seconds."""
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    return [p.pid for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


async def _agent_pid(placement: RayPlacement, node_id: str) -> int:
    listed = await placement.nodes()
    assert listed is not None
    (pid,) = [n.agent_pid for n in listed.nodes if n.node_id == node_id]
    assert pid is not None
    return pid


async def test_a_setsid_grandchild_dies_with_the_close(placement: RayPlacement) -> None:
    with trio.fail_after(60):
        async with placement.open(_spec("g", 1, argv=GRANDPARENT)) as child:
            grandchild = int(await child.frames().__anext__())
            assert psutil.Process(grandchild).ppid() == child.pid
            assert os.getsid(grandchild) != os.getsid(child.pid)
        assert await trio.to_thread.run_sync(_gone, [child.pid, grandchild], 10.0) == []


async def test_sigkill_of_an_agent_loses_its_children_and_its_setsid_grandchild(
        placement: RayPlacement) -> None:
    with trio.fail_after(90):
        async with placement.open(_spec("k", 1, argv=GRANDPARENT)) as child:
            grandchild = int(await child.frames().__anext__())
            agent = await _agent_pid(placement, child.node_id)
            os.kill(agent, signal.SIGKILL)
            status = await child.wait()
            assert status.reason == "lost"
        # The child dies with its agent (parent-death signal); the grandchild that left its
        # session, with the sweep of the node's next agent.
        assert await trio.to_thread.run_sync(_gone, [child.pid], 5.0) == []
        assert await trio.to_thread.run_sync(_gone, [grandchild], 30.0) == []
        while (await placement.nodes()) is None or not await _has_agent(placement, child.node_id):
            await trio.sleep(0.2)


async def _has_agent(placement: RayPlacement, node_id: str) -> bool:
    listed = await placement.nodes()
    return listed is not None and any(n.node_id == node_id and n.agent_pid for n in listed.nodes)


async def test_an_agent_that_loses_the_heartbeat_kills_its_children_and_exits(
        ray_cluster: RayCluster, tmp_path: object) -> None:
    backend = RayPlacement(str(tmp_path), None, address=ray_cluster.address, heartbeat_timeout=3.0,
                           namespace="corral-fence-test")
    with trio.fail_after(120):
        with pytest.RaisesGroup(ChildExited):
            async with trio.open_nursery() as nursery:
                await nursery.start(backend.run)
                async with backend.open(_spec("f", 1)) as child:
                    agent = await _agent_pid(backend, child.node_id)
                    gateway = [p for p in psutil.Process().children()
                               if "supervisor.placement.ray.gateway" in " ".join(p.cmdline())]
                    assert len(gateway) == 1
                    gateway[0].kill()
                    assert (await child.wait()).reason == "lost"
                    started = trio.current_time()
                    left = await trio.to_thread.run_sync(_gone, [child.pid, agent], 3.0 + 2.0)
                    assert left == [], f"alive {trio.current_time() - started:.1f} s after the gateway died"


FLOOD_LINES = 65536  # 64 MiB of 1 KiB lines: more than every buffer on the way holds
FLOOD = [sys.executable, "-u", "-c",
         ("import pathlib, sys\n"
          "line = b'x' * 1023 + b'\\n'\n"
          f"for _ in range({FLOOD_LINES}):\n"
          "    sys.stdout.buffer.write(line)\n"
          "sys.stdout.buffer.flush()\n"
          "pathlib.Path(sys.argv[1]).touch()\n")]


async def test_a_session_that_does_not_read_stops_its_remote_child(
        placement: RayPlacement, tmp_path: object) -> None:
    """The daemon holds at most the window and one batch of a remote child's output that its
    session did not take, and the child blocks on its node, as a local child on its pipe; once
    the session reads, every line arrives."""
    done = os.path.join(str(tmp_path), "flooded")
    with trio.fail_after(120):
        async with placement.open(_spec("w", 1, argv=[*FLOOD, done])) as child:
            while child.buffered < OUTPUT_WINDOW:
                await trio.sleep(0.05)
            held = []
            for _ in range(20):  # two seconds in which nothing is read: the output stays bounded
                held.append(child.buffered)
                await trio.sleep(0.1)
            assert max(held) <= OUTPUT_WINDOW + BATCH_LIMIT, max(held)
            assert not os.path.exists(done), "the child wrote all its output with nobody reading"
            count = 0
            async for frame in child.frames():
                assert frame == b"x" * 1023
                count += 1
            assert count == FLOOD_LINES
            assert os.path.exists(done)
            assert (await child.close()).reason == "exited"
