"""The worker process: length-prefixed ``protocol.native`` frames on stdin and stdout.

stdout carries frames and nothing else: at start-up the real stdout is moved to a private
descriptor and descriptor 1 (and ``sys.stdout``) become stderr, so a stray ``print`` in a library
cannot corrupt the stream. Logs go to stderr, which the daemon keeps the tail of and logs, one
line a record without library tracebacks unless ``CORRAL_DEBUG`` is set (``supervisor.logformat``).

The worker is a child subreaper: a job the model left running in the background (``cmd > log &``:
the bash tool lets those live) is re-parented to the worker when its shell exits, so it stays in
the worker's process tree. On the way out the worker stops every process group of that tree
(TERM, a short grace, KILL), and the daemon's close sequence, which walks the tree before it
kills, finds them too. Orphans that exit earlier stay zombies until the worker exits (reaping
them would race asyncio's own child watchers).

Exit status: 0 after ``shutdown`` or the end of stdin; 2 when ``start`` failed (its ``error``
event was sent first); 3 when stdin carried garbage (a framing error).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys

import msgspec

from protocol.errors import CorralError
from protocol.events import Error, Event
from protocol.framing import DEFAULT_LIMIT, LengthPrefixFramer
from protocol.native import Ask, decode_command, encode_event
from supervisor import logformat
from supervisor.proc.prctl import set_child_subreaper

__all__ = ["main"]

log = logging.getLogger("corral.native")

_READ_SIZE = 1 << 16


def main() -> int:
    """Run one worker until ``shutdown`` or the end of stdin."""
    frames_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(level=os.environ.get("CORRAL_NATIVE_LOG", "WARNING"), handlers=[
        logformat.handler(logging.StreamHandler(sys.stderr), "%(levelname)s %(name)s: %(message)s")])
    set_child_subreaper()
    try:
        return asyncio.run(_serve(0, frames_out))
    finally:
        _stop_descendants()


async def _serve(in_fd: int, out_fd: int) -> int:
    from .handler import StartFailed, Worker  # ADK is imported here, after the pipes are safe

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_READ_SIZE)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                 os.fdopen(in_fd, "rb", buffering=0))
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(out_fd, "wb", buffering=0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    framer = LengthPrefixFramer(DEFAULT_LIMIT)

    def emit(event: Event | Ask) -> None:
        writer.write(framer.encode(encode_event(event)))

    worker = Worker(emit, send_ask=emit)
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


def _stop_descendants(grace: float = 1.0) -> None:
    """TERM every process group in this process's tree (not its own), then KILL what is left."""
    import psutil

    me = os.getpid()
    try:
        procs = psutil.Process(me).children(recursive=True)
    except psutil.Error:
        return
    own = os.getpgid(me)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in procs:
            with contextlib.suppress(OSError, psutil.Error):
                group = os.getpgid(proc.pid)
                if group != own:
                    os.killpg(group, sig)
                else:
                    proc.send_signal(sig)
        _, procs = psutil.wait_procs(procs, timeout=grace)
        if not procs:
            return
