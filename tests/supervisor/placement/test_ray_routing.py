"""The daemon's side of the Ray backend without a cluster: how gateway frames reach remote
children (``RayPlacement._route``), the epoch fence, the daemon-side framing of raw bytes, and
the flow control of a child's output (``wire.Credit``) on both sides of the gateway's socket."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from protocol.errors import FrameTooLarge
from supervisor.placement.ray.client import RayPlacement
from supervisor.placement.ray.remotechild import RemoteChild
from supervisor.placement.ray.wire import (
    OUTPUT_WINDOW,
    Close,
    Credit,
    Exited,
    Output,
    Spawn,
    Spawned,
    decode_daemon_frame,
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


async def test_output_is_given_back_as_the_session_takes_it(tmp_path: Path) -> None:
    """The daemon's half of the flow control: relayed bytes wait in ``buffered`` and no credit
    goes back until the session takes them; then one ``Credit`` per half window it took."""
    placement = RayPlacement(tmp_path, None)
    posts, posted = trio.open_memory_channel[object](100)
    placement._posts = posts
    child = _child(placement, "s", 1, limit=OUTPUT_WINDOW)
    line = b"x" * 1023 + b"\n"
    batch = line * (OUTPUT_WINDOW // 4 // len(line))  # a quarter of the window
    for _ in range(6):
        _route(placement, Output(session_id="s", epoch=1, data=batch))
    assert child.buffered == 6 * len(batch)
    with pytest.raises(trio.WouldBlock):
        posted.receive_nowait()  # nothing taken, nothing given back
    frames = child.frames()
    taken = 0
    while taken < 3 * len(batch):
        taken += len(await frames.__anext__()) + 1
    credits = []
    while True:
        try:
            credits.append(posted.receive_nowait())
        except trio.WouldBlock:
            break
    assert credits == [Credit(session_id="s", epoch=1, size=2 * len(batch))]
    assert child.buffered == 6 * len(batch) - 3 * len(batch)


class _Socket:
    """The gateway's end of the socket, as the daemon writes to it: the frames sent."""

    def __init__(self) -> None:
        self.sent: list[object] = []

    async def send_all(self, data: bytes) -> None:
        self.sent.append(decode_daemon_frame(data[4:]))


async def test_a_spawn_given_up_before_its_answer_closes_the_child_it_started(tmp_path: Path) -> None:
    """A stopping daemon cancels a spawn that waits for the gateway; the child the gateway
    started for it all the same is closed when its late ``Spawned`` comes."""
    placement = RayPlacement(tmp_path, None)
    socket = _Socket()
    placement._stream = socket  # type: ignore[assignment]
    posts, posted = trio.open_memory_channel[object](100)
    placement._posts = posts
    placement._connected.set()
    spec = ProcessSpec(key="session:s:3", argv=["x"])
    async with trio.open_nursery() as nursery:
        async def spawn() -> None:
            async with placement.open(spec):
                raise AssertionError("the spawn was given up: no child is opened")
        nursery.start_soon(spawn)
        await wait_all_tasks_blocked()
        (asked,) = socket.sent
        assert isinstance(asked, Spawn) and (asked.session_id, asked.epoch) == ("s", 3)
        nursery.cancel_scope.cancel()
    placement._route(decode_gateway_frame(encode(Spawned(
        id=asked.id, node_id="n1", node_ip="127.0.0.1", agent_pid=10, pid=20, create_time=0.0))))
    assert posted.receive_nowait() == Close(session_id="s", epoch=3, brutal=True)
    assert placement.children == {}
    placement._route(decode_gateway_frame(encode(Spawned(  # a second answer: nothing more
        id=asked.id, node_id="n1", node_ip="127.0.0.1", agent_pid=10, pid=20, create_time=0.0))))
    with pytest.raises(trio.WouldBlock):
        posted.receive_nowait()


async def test_the_gateway_relays_only_on_credit() -> None:
    """The gateway's half: a batch may overdraw the credit, the next waits until it is given
    back (asyncio, as in the gateway)."""
    import asyncio

    from supervisor.placement.ray.gateway import OutputCredit

    async def run() -> None:
        credit = OutputCredit(window=100)
        await asyncio.wait_for(credit.wait(), 1)
        credit.spend(150)  # one batch larger than what was left
        waiting = asyncio.create_task(credit.wait())
        await asyncio.sleep(0)
        assert not waiting.done()
        credit.grant(40)  # still overdrawn
        await asyncio.sleep(0)
        assert not waiting.done()
        credit.grant(60)
        await asyncio.wait_for(waiting, 1)
        assert credit.left == 50

    await trio.to_thread.run_sync(asyncio.run, run())
