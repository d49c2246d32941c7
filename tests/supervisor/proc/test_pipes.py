"""Reading a child's stdout into frames (``supervisor.proc.pipes.read_frames``), in memory."""

from __future__ import annotations

import trio
import trio.testing

from protocol.framing import NdjsonFramer
from supervisor.proc.pipes import read_frames


async def test_frames_of_one_chunk_are_handed_over_in_one_step_and_a_full_channel_holds_the_reader() -> None:
    send_stream, receive_stream = trio.testing.memory_stream_one_way_pair()
    out, frames = trio.open_memory_channel[bytes](2)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_frames, receive_stream, NdjsonFramer(1024), out)
        await send_stream.send_all(b"a\nb\nc\n")
        await trio.testing.wait_all_tasks_blocked()
        # Two fit; the reader waits for room for the third (back-pressure up to the pipe).
        assert frames.statistics().current_buffer_used == 2
        assert out.statistics().tasks_waiting_send == 1
        assert [await frames.receive() for _ in range(3)] == [b"a", b"b", b"c"]
        await send_stream.aclose()  # end of stream: the reader returns
    assert frames.statistics().current_buffer_used == 0
