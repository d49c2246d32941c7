"""The worker process: length-prefixed ``protocol.native`` frames on stdin and stdout.

stdout carries frames and nothing else: at start-up the real stdout is moved to a private
descriptor and descriptor 1 (and ``sys.stdout``) become stderr, so a stray ``print`` in a library
cannot corrupt the stream. Logs go to stderr, which the daemon keeps the tail of.

Exit status: 0 after ``shutdown`` or the end of stdin; 2 when ``start`` failed (its ``error``
event was sent first); 3 when stdin carried garbage (a framing error).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

import msgspec

from protocol.errors import CorralError
from protocol.events import Error, Event
from protocol.framing import DEFAULT_LIMIT, LengthPrefixFramer
from protocol.native import decode_command, encode_event

__all__ = ["main"]

log = logging.getLogger("corral.native")

_READ_SIZE = 1 << 16


def main() -> int:
    """Run one worker until ``shutdown`` or the end of stdin."""
    frames_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("CORRAL_NATIVE_LOG", "WARNING"),
                        format="%(levelname)s %(name)s: %(message)s")
    return asyncio.run(_serve(0, frames_out))


async def _serve(in_fd: int, out_fd: int) -> int:
    from .core import StartFailed, Worker  # ADK is imported here, after the pipes are safe

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_READ_SIZE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                 os.fdopen(in_fd, "rb", buffering=0))
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(out_fd, "wb", buffering=0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    framer = LengthPrefixFramer(DEFAULT_LIMIT)

    def emit(event: Event) -> None:
        writer.write(framer.encode(encode_event(event)))

    worker = Worker(emit)
    code = 0
    try:
        while not worker.finished.is_set():
            data = await reader.read(_READ_SIZE)
            if not data:
                framer.eof()
                break
            framer.receive_data(data)
            for frame in framer.frames():
                try:
                    command = decode_command(frame)
                except msgspec.DecodeError as exc:
                    emit(Error(code="native.protocol.bad_frame", error_class="protocol",
                               message=f"unreadable command: {exc}"))
                    continue
                await worker.handle(command)
                await writer.drain()
    except StartFailed:
        code = 2
    except CorralError as exc:
        log.error("stdin: %s", exc.message)
        code = 3
    finally:
        if not worker.finished.is_set():
            await worker.shutdown()
        await writer.drain()
        writer.close()
    return code
