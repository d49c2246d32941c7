"""A child's stdout read in its consumer's task (``ProcessChild.receive_frame``)."""

from __future__ import annotations

import trio
import trio.testing

from supervisor.proc.child import open_child
from supervisor.proc.spec import ProcessSpec


async def test_frames_of_one_read_are_handed_over_without_a_schedule_point_and_nothing_reads_ahead() -> None:
    spec = ProcessSpec(key="pipes", argv=["printf", "a\\nb\\nc\\n"], shutdown=2)
    with trio.fail_after(30):
        async with open_child(spec) as child:
            assert await child.receive_frame() == b"a"  # one read brought all three lines
            with trio.CancelScope() as scope:  # no schedule point, so no chance to be cancelled
                scope.cancel()
                assert [await child.receive_frame(), await child.receive_frame()] == [b"b", b"c"]
            assert not scope.cancelled_caught
            assert [frame async for frame in child.frames()] == []
