"""A child's pipes and exit, at the byte level: stdout frames (and the framer a spec asks for),
stderr lines, the exit peek (and the ``ExitStatus`` it makes).

Memory stays bounded whatever the child writes: stdout is read a chunk at a time, only when its
consumer wants a frame, into a framer that fails as soon as a frame outgrows its limit (a slow
consumer stops the pipe, and so the child, instead of growing a queue); stderr lines are cut at
a byte limit and the rest of an over-long line is skipped.
"""

from __future__ import annotations

import collections
import errno
import os
import signal
from collections.abc import Awaitable, Callable, Iterator
from functools import partial

import trio

from protocol.errors import ProtocolError
from protocol.framing import (
    ContentLengthFramer,
    Framer,
    FramerFactory,
    LengthPrefixFramer,
    NdjsonFramer,
)
from supervisor.proc.spec import ExitReason, ExitStatus, ProcessSpec

_READ_SIZE = 65536


class RawFramer:
    """The ``raw`` framing: bytes as they come, cut into frames of at most ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        if limit <= 0:
            raise ValueError(f"raw frame limit must be > 0, got {limit}")
        self._limit = limit
        self._frames: collections.deque[bytes] = collections.deque()
        self._ended = False

    @property
    def limit(self) -> int:
        """The largest frame handed out."""
        return self._limit

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Queue ``data`` as one or more frames. Raises ``ProtocolError`` after ``eof``."""
        if self._ended:
            raise ProtocolError("data received after eof")
        with memoryview(data) as view:
            for start in range(0, len(view), self._limit):
                self._frames.append(view[start : start + self._limit].tobytes())

    def next_frame(self) -> bytes | None:
        """The next queued chunk, or None."""
        return self._frames.popleft() if self._frames else None

    def frames(self) -> Iterator[bytes]:
        """Every queued chunk, in order."""
        while self._frames:
            yield self._frames.popleft()

    def eof(self) -> None:
        """Mark the end; raw framing has no torn frames."""
        self._ended = True

    def encode(self, payload: bytes) -> bytes:
        """``payload`` unchanged."""
        return bytes(payload)


async def receive_chunk(stream: trio.lowlevel.FdStream) -> bytes:
    """The next chunk of the pipe ``stream`` (at most 64 KiB); empty at its end, or once it
    broke or was closed under the reader. One reader at a time.

    Exactly one schedule point per chunk: the wait for the pipe to become readable, or, when
    data was already there, a yield that cannot be cancelled (so a flooding child cannot starve
    the loop, and no chunk read is lost to a cancellation). trio's ``receive_some`` takes a
    checkpoint *before* reading as well, which costs a trickled frame (the usual case: a
    streamed answer) one more pass of the scheduler.
    """
    await trio.lowlevel.checkpoint_if_cancelled()
    waited = False
    while True:
        fd = stream.fileno()  # -1 once closed: never a number another file reuses
        try:
            data = _read_nowait(fd)
        except OSError:
            return b""  # closed (EBADF) or broken
        if data is None:
            try:
                await trio.lowlevel.wait_readable(fd)
            except trio.ClosedResourceError:
                return b""
            waited = True
            continue
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()
        return data


def _read_nowait(fd: int) -> bytes | None:
    """What the non-blocking pipe ``fd`` holds (at most 64 KiB; empty at its end); ``None`` while
    it is empty. A function of its own: a ``BlockingIOError`` caught in ``receive_chunk`` would
    give the waiting coroutines a frame object each, kept while they wait (~500 bytes a pipe)."""
    try:
        return os.read(fd, _READ_SIZE)
    except BlockingIOError:
        return None


async def write_all(stream: trio.lowlevel.FdStream, data: bytes) -> None:
    """Write ``data`` to the pipe ``stream``: at once when the pipe has room, so the bytes are
    with the reader before this task yields (trio's ``send_all`` yields first), else the rest as
    ``send_all`` does. One writer at a time. Raises ``trio.ClosedResourceError`` once the stream
    was closed and ``trio.BrokenResourceError`` once the reader is gone; if cancelled, part of
    ``data`` may have been written."""
    await trio.lowlevel.checkpoint_if_cancelled()
    written = write_nowait(stream.fileno(), data, "pipe")
    if written < len(data):
        await stream.send_all(memoryview(data)[written:])
    else:
        await trio.lowlevel.cancel_shielded_checkpoint()


def write_nowait(fd: int, data: bytes, what: str) -> int:
    """Write what the non-blocking ``fd`` (a pipe or a socket, named ``what`` in errors) takes
    of ``data`` now; how many bytes that was (0 when it is full). Raises
    ``trio.ClosedResourceError`` once ``fd`` was closed (-1 or ``EBADF``) and
    ``trio.BrokenResourceError`` once the other end is gone, as trio's streams do."""
    try:
        return os.write(fd, data)
    except BlockingIOError:
        return 0
    except OSError as exc:
        if exc.errno == errno.EBADF:
            raise trio.ClosedResourceError(f"the {what} was closed") from None
        raise trio.BrokenResourceError(f"cannot write to the {what}: {exc}") from exc


async def read_stderr_lines(
    stream: trio.lowlevel.FdStream, on_line: Callable[[str], None], line_limit: int
) -> None:
    """Call ``on_line`` for each line of ``stream`` (decoded, ``\\r\\n`` stripped).

    A line longer than ``line_limit`` bytes is cut there (marked with ``…``) and its rest skipped.
    """
    buf = bytearray()
    skipping = False
    while chunk := await receive_chunk(stream):
        buf += chunk
        while (newline := buf.find(b"\n")) >= 0:
            if not skipping:
                on_line(_decode(buf[:newline]))
            skipping = False
            del buf[: newline + 1]
        if len(buf) > line_limit:
            if not skipping:
                on_line(_decode(buf[:line_limit]) + "…")
            skipping = True
            buf.clear()
    if buf and not skipping:
        on_line(_decode(buf))


class FrameIterator:
    """Async iteration over ``receive()`` until it raises ``trio.EndOfChannel``."""

    def __init__(self, receive: Callable[[], Awaitable[bytes]]) -> None:
        self._receive = receive

    def __aiter__(self) -> FrameIterator:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self._receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None


def open_pidfd(pid: int) -> int | None:
    """A pidfd for ``pid`` (readable once it exits), or None where the kernel has none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def block_until_exited(pid: int) -> None:
    """Block until child ``pid`` has exited, without reaping it (the no-pidfd fallback)."""
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)


def peek_exit(pid: int) -> tuple[int | None, str | None]:
    """``(exit_code, signal_name)`` of exited child ``pid``, read without reaping it."""
    info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    if info is None:
        return None, None
    if info.si_code == os.CLD_EXITED:
        return info.si_status, None
    try:
        return None, signal.Signals(info.si_status).name
    except ValueError:
        return None, f"SIG{info.si_status}"


def framer_factory(spec: ProcessSpec) -> FramerFactory:
    """What makes the framer of a child's stdout, by ``spec.framing``."""
    match spec.framing:
        case "ndjson":
            return partial(NdjsonFramer, spec.frame_limit)
        case "content_length":
            return partial(ContentLengthFramer, spec.frame_limit)
        case "length_prefix":
            return partial(LengthPrefixFramer, spec.frame_limit)
        case "raw":
            return partial(RawFramer, spec.frame_limit)


def status_of(pid: int, *, killed: bool) -> ExitStatus:
    """How ``pid`` ended (read before it is reaped); ``killed`` says whether we signalled it."""
    exit_code, sig = peek_exit(pid)
    reason: ExitReason = "killed" if killed else "crashed" if sig is not None else "exited"
    return ExitStatus(reason=reason, exit_code=exit_code, signal=sig)


def _decode(line: bytes | bytearray) -> str:
    return bytes(line).rstrip(b"\r").decode("utf-8", "replace")
