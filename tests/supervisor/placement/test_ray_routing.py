"""The daemon's side of the Ray backend without a cluster: how gateway frames reach remote
children (``RayPlacement._route``), the epoch fence, and the daemon-side framing of raw bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from protocol.errors import FrameTooLarge
from supervisor.placement.ray.client import RayPlacement, RemoteChild
from supervisor.placement.ray.wire import (
    Exited,
    Output,
    Spawned,
    decode_gateway_frame,
    encode,
)
from supervisor.proc.spec import ProcessSpec


def _child(placement: RayPlacement, session: str, epoch: int, limit: int = 1024) -> RemoteChild:
    spec = ProcessSpec(key=f"session:{session}:{epoch}", argv=["x"], frame_limit=limit)
    spawned = Spawned(id=1, node_id="n1", node_ip="127.0.0.1", agent_pid=10, pid=20, create_time=0.0)
    child = RemoteChild(placement, spec, session, epoch, spawned)
    placement.children[(session, epoch)] = child
    return child


def _route(placement: RayPlacement, frame: Output | Exited) -> None:
    placement._route(decode_gateway_frame(encode(frame)))  # as it comes off the socket


async def test_frames_of_a_stale_epoch_are_dropped(tmp_path: Path) -> None:
    placement = RayPlacement(tmp_path, None)
    current = _child(placement, "s", 2)
    _route(placement, Output(session_id="s", epoch=1, data=b'{"old": 1}\n'))
    _route(placement, Exited(session_id="s", epoch=1, reason="exited", exit_code=0))
    _route(placement, Output(session_id="s", epoch=2, data=b'{"new": 1}\n{"ne'))
    _route(placement, Output(session_id="s", epoch=2, data=b'w": 2}\n'))
    _route(placement, Exited(session_id="s", epoch=2, reason="crashed", signal="SIGSEGV"))
    assert placement.stale_dropped == 2
    assert [frame async for frame in current.frames()] == [b'{"new": 1}', b'{"new": 2}']
    assert current.status is not None and current.status.signal == "SIGSEGV"
    _route(placement, Output(session_id="s", epoch=2, data=b"late\n"))  # after its end
    assert placement.stale_dropped == 3


async def test_a_lost_child_reads_to_its_end_and_then_refuses_input(tmp_path: Path) -> None:
    placement = RayPlacement(tmp_path, None)
    child = _child(placement, "s", 1)
    _route(placement, Output(session_id="s", epoch=1, data=b"one\n"))
    _route(placement, Exited(session_id="s", epoch=1, reason="lost"))
    assert [frame async for frame in child.frames()] == [b"one"]
    assert (await child.close()).reason == "lost"
    with pytest.raises(Exception, match="no longer reads"):
        await child.send(b"x\n")


async def test_an_over_long_frame_from_a_node_is_a_framing_error(tmp_path: Path) -> None:
    placement = RayPlacement(tmp_path, None)
    child = _child(placement, "s", 1, limit=8)
    _route(placement, Output(session_id="s", epoch=1, data=b"ok\n" + b"x" * 20))
    frames = child.frames()
    assert await frames.__anext__() == b"ok"
    with pytest.raises(FrameTooLarge), trio.fail_after(1):
        await frames.__anext__()
