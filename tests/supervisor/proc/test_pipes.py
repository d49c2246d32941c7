"""A child's stdout read in its consumer's task (``ProcessChild.receive_frame``) and the pipe
reads under it (``supervisor.proc.pipes.receive_chunk``)."""

from __future__ import annotations

import os

import trio
import trio.testing

from supervisor.proc.child import open_child
from supervisor.proc.pipes import receive_chunk
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


class _Steps(trio.abc.Instrument):
    """Counts the scheduler passes of the tasks named ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task.name.endswith(self.name):
            self.steps += 1


async def _read_counting_steps(stream: trio.lowlevel.FdStream, write_end: int | None = None) -> tuple[bytes, int]:
    """``receive_chunk`` in a task of its own; its result and how many passes the task took,
    first to last. With ``write_end``, the chunk is written only once the reader waits for it."""
    result: list[bytes] = []

    async def reader() -> None:
        result.append(await receive_chunk(stream))

    steps = _Steps(".reader")
    trio.lowlevel.add_instrument(steps)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            if write_end is not None:
                await trio.testing.wait_all_tasks_blocked()
                os.write(write_end, b"late\n")
    finally:
        trio.lowlevel.remove_instrument(steps)
    return result[0], steps.steps


async def test_a_chunk_costs_the_reader_one_schedule_point_whether_it_waited_or_not() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    stream = trio.lowlevel.FdStream(read_end)
    try:
        os.write(write_end, b"ready\n")
        # Read, yield, done; and: wait (the yield), read, done. trio's receive_some takes three
        # passes for the second: it yields before its first read as well.
        assert await _read_counting_steps(stream) == (b"ready\n", 2)
        assert await _read_counting_steps(stream, write_end) == (b"late\n", 2)
    finally:
        os.close(write_end)
        await stream.aclose()


async def test_a_cancelled_reader_reads_nothing_and_a_closed_pipe_reads_as_its_end() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    stream = trio.lowlevel.FdStream(read_end)
    os.write(write_end, b"kept\n")
    with trio.CancelScope() as scope:
        scope.cancel()
        await receive_chunk(stream)
    assert scope.cancelled_caught
    assert await receive_chunk(stream) == b"kept\n"  # the cancelled read took nothing
    os.close(write_end)
    assert await receive_chunk(stream) == b""
    await stream.aclose()
    assert await receive_chunk(stream) == b""  # closed: never another file's descriptor
