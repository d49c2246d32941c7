"""A child's stdout read in its consumer's task (``ProcessChild.receive_frame``) and the pipe
reads and writes under it (``supervisor.proc.pipes.receive_chunk``, ``write_all``)."""

from __future__ import annotations

import os

import pytest
import trio
import trio.testing

from supervisor.proc.child import open_child
from supervisor.proc.pipes import receive_chunk, write_all
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


class _FirstStep(trio.abc.Instrument):
    """What the pipe held when the task named ``name`` first gave up the CPU."""

    def __init__(self, name: str, read_end: int) -> None:
        self.name = name
        self.read_end = read_end
        self.seen: bytes | None = None

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        if task.name.endswith(self.name) and self.seen is None:
            try:
                self.seen = os.read(self.read_end, 1024)
            except BlockingIOError:
                self.seen = b""


async def test_a_write_is_in_the_pipe_before_the_writer_first_yields_and_a_big_one_waits_for_room() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    stream = trio.lowlevel.FdStream(write_end)
    try:
        async def writer() -> None:
            await write_all(stream, b"prompt\n")

        first = _FirstStep(".writer", read_end)
        trio.lowlevel.add_instrument(first)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(writer)
        finally:
            trio.lowlevel.remove_instrument(first)
        assert first.seen == b"prompt\n"  # trio's send_all yields before it writes: b""

        big = bytes(range(256)) * 4096  # 1 MiB: far more than a pipe holds
        received = bytearray()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write_all, stream, big)
            with trio.fail_after(10):
                while len(received) < len(big):
                    await trio.lowlevel.wait_readable(read_end)
                    received += os.read(read_end, 1 << 16)
        assert received == big
    finally:
        os.close(read_end)
    with pytest.raises(trio.BrokenResourceError):
        await write_all(stream, b"nobody reads\n")
    await stream.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await write_all(stream, b"closed\n")
