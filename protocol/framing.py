"""Sans-IO framers: bytes from a pipe or socket in, whole frames out; payloads in, wire bytes out.

Three wire formats, one API (``Framer``):

* ``NdjsonFramer``: one frame per ``\\n``-terminated line (vendor CLIs, the fake harness).
* ``ContentLengthFramer``: ``Content-Length: N`` headers, a blank line, N bytes (LSP, JSON-RPC).
* ``LengthPrefixFramer``: a 4-byte big-endian length, then that many bytes (native worker pipes).

Theory of operation. ``receive_data`` appends to one ``bytearray`` and parses eagerly, so the
bytes held for an unfinished frame never exceed the limit (plus a bounded header): a child that
floods stdout without ever ending a frame is caught as soon as the partial frame is too long, not
when it finally ends. Complete frames wait in a queue for ``next_frame``/``frames``. Bad input is
not raised from ``receive_data``: the error is parked, the untrusted rest of the stream is
dropped, and ``next_frame`` raises it once the frames that arrived intact before it have been
handed out, so errors surface in stream order. From then on the framer is failed: every call but
``encode`` raises an error of the same type. Searches resume where the last one stopped, so a
large frame arriving in many small chunks costs linear time.

Errors: ``FrameTooLarge`` when a frame is longer than ``limit`` bytes; ``ProtocolError`` for
garbage (a bad or missing header, a torn final frame, data after ``eof``). ``encode`` raises the
same types for a payload this framer could not carry faithfully.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator
from typing import Protocol, TypeAlias

from protocol.errors import CorralError, FrameTooLarge, ProtocolError

DEFAULT_LIMIT = 16 * 1024 * 1024
"""The default frame limit in bytes (16 MiB), as the design asks of every child's output."""

DEFAULT_HEADER_LIMIT = 8 * 1024
"""The default bound on a Content-Length header block, blank line included."""

_MAX_PREFIXED = 0xFFFF_FFFF


class Framer(Protocol):
    """What every framer offers, so a process child can take any of them from a factory."""

    @property
    def limit(self) -> int:
        """The largest frame, in bytes, this framer accepts or produces."""
        ...

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Feed bytes read from the peer; empty data is a no-op (the end is ``eof``)."""
        ...

    def next_frame(self) -> bytes | None:
        """The next complete frame, or ``None`` until more data arrives; raises on bad input."""
        ...

    def frames(self) -> Iterator[bytes]:
        """Every complete frame buffered so far, in order."""
        ...

    def eof(self) -> None:
        """Mark the end of the stream; raise a parked error, or ``ProtocolError`` if the stream
        ended inside a frame (a torn final frame)."""
        ...

    def encode(self, payload: bytes) -> bytes:
        """The wire bytes for one frame carrying ``payload``."""
        ...


FramerFactory: TypeAlias = Callable[[], Framer]
"""Builds a fresh framer per stream, e.g. ``functools.partial(NdjsonFramer, limit=1 << 20)``."""


class _BufferedFramer(abc.ABC):
    """The queue, parked-error and eof machinery shared by the three formats.

    Subclasses implement ``_parse`` (move complete frames from ``_buf`` to ``_frames``, raise on
    bad input), ``_partial`` (whether ``_buf`` holds part of a frame) and ``encode``.
    """

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"frame limit must be >= 0, got {limit}")
        self._limit = limit
        self._buf = bytearray()
        # A list read from ``_taken`` on, emptied once drained: an idle stream's queue is an empty
        # list (56 bytes), where a deque keeps a 760-byte block (issue 24: one per session).
        self._frames: list[bytes] = []
        self._taken = 0
        self._pending: CorralError | None = None
        self._failed: CorralError | None = None
        self._ended = False

    @property
    def limit(self) -> int:
        """The largest frame, in bytes, this framer accepts or produces."""
        return self._limit

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Feed bytes read from the peer and parse every frame they complete.

        Never raises for bad input (that comes out of ``next_frame``, after the good frames
        before it); raises only if the framer already failed or ``eof`` was called. Bytes after
        a parked error are dropped: the stream cannot be trusted past it.
        """
        self._raise_if_failed()
        if self._ended:
            raise ProtocolError("data received after eof")
        if self._pending is not None or not data:
            return
        self._buf += data
        try:
            self._parse()
        except (FrameTooLarge, ProtocolError) as exc:
            self._pending = exc
            self._buf.clear()

    def next_frame(self) -> bytes | None:
        """The next complete frame, or ``None`` if more data is needed.

        Raises ``FrameTooLarge`` or ``ProtocolError`` once the frames received intact before a
        bad one are gone; after that, every call raises again.
        """
        if self._taken < len(self._frames):
            frame = self._frames[self._taken]
            self._taken += 1
            if self._taken == len(self._frames):
                self._frames.clear()
                self._taken = 0
            return frame
        self._raise_if_failed()
        self._raise_pending()
        return None

    def frames(self) -> Iterator[bytes]:
        """Yield every complete frame buffered so far; raises as ``next_frame`` does."""
        while (frame := self.next_frame()) is not None:
            yield frame

    def eof(self) -> None:
        """Mark the end of the stream. Complete frames stay available from ``next_frame``.

        Raises the parked error if there is one, and ``ProtocolError`` if the stream ended
        inside a frame (a torn final frame); either way the framer is failed afterwards.
        """
        self._ended = True
        self._raise_if_failed()
        self._raise_pending()
        if self._partial():
            self._buf.clear()
            self._failed = ProtocolError("stream ended inside a frame (torn final frame)")
            raise self._failed

    def _raise_pending(self) -> None:
        if self._pending is not None:
            self._failed, self._pending = self._pending, None
            raise self._failed

    def _raise_if_failed(self) -> None:
        # A fresh exception each time: re-raising one object would grow its traceback forever.
        if (err := self._failed) is not None:
            raise type(err)(f"framer already failed: {err.message}", data=err.data) from err

    def _too_large(self, length: int, *, at_least: bool = False) -> FrameTooLarge:
        bound = "at least " if at_least else ""
        return FrameTooLarge(
            f"frame of {bound}{length} bytes exceeds the limit of {self._limit} bytes",
            data={"limit": self._limit, "length": length},
        )

    def _check_payload(self, payload: bytes) -> None:
        if len(payload) > self._limit:
            raise self._too_large(len(payload))

    @abc.abstractmethod
    def _parse(self) -> None:
        """Move every complete frame from the buffer to the queue (or hold the stream's error)."""

    def _partial(self) -> bool:
        return bool(self._buf)


def _take(buf: bytearray, start: int, end: int) -> bytes:
    """``bytes(buf[start:end])`` with one copy instead of two."""
    with memoryview(buf) as view:
        return view[start:end].tobytes()


class NdjsonFramer(_BufferedFramer):
    """Newline-delimited frames: a trailing ``\\r`` is stripped and empty lines are skipped.

    The limit counts the line without its ``\\n`` and optional ``\\r``. A final line without a
    newline is a torn frame at ``eof``.
    """

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        super().__init__(limit)
        self._scanned = 0

    def encode(self, payload: bytes) -> bytes:
        """``payload`` plus ``\\n``. Refuses (``ProtocolError``) what would not decode back as
        one identical frame: an empty payload, one containing ``\\n``, or one ending in ``\\r``."""
        if not payload or b"\n" in payload or payload.endswith(b"\r"):
            raise ProtocolError("NDJSON payload must be non-empty, without \\n, not ending in \\r")
        self._check_payload(payload)
        return payload + b"\n"

    def _parse(self) -> None:
        buf, limit = self._buf, self._limit
        pos = 0
        try:
            while (newline := buf.find(b"\n", self._scanned)) >= 0:
                end = newline - 1 if newline > pos and buf[newline - 1] == 0x0D else newline
                if end - pos > limit:
                    raise self._too_large(end - pos)
                if end > pos:
                    self._frames.append(_take(buf, pos, end))
                pos = self._scanned = newline + 1
            self._scanned = len(buf)
        finally:
            del buf[:pos]
            self._scanned -= pos
        # A partial line one byte over the limit may still end in "\r\n"; beyond that it cannot.
        if len(buf) > limit + 1 or (len(buf) == limit + 1 and buf[-1] != 0x0D):
            raise self._too_large(len(buf), at_least=True)


class ContentLengthFramer(_BufferedFramer):
    """``Content-Length: N`` header framing as LSP and JSON-RPC over stdio use it.

    Header names are case-insensitive; ``Content-Type`` and unknown headers are accepted and
    ignored. The header block, blank line included, must fit in ``header_limit`` bytes. A
    missing, repeated, negative or non-numeric length is a ``ProtocolError``; a length over
    ``limit`` is ``FrameTooLarge`` before any of the body is buffered.
    """

    def __init__(self, limit: int = DEFAULT_LIMIT, *, header_limit: int = DEFAULT_HEADER_LIMIT) -> None:
        super().__init__(limit)
        self._header_limit = header_limit
        self._scanned = 0
        self._body_length: int | None = None

    def encode(self, payload: bytes) -> bytes:
        """``Content-Length: N\\r\\n\\r\\n`` followed by ``payload``."""
        self._check_payload(payload)
        return b"Content-Length: %d\r\n\r\n" % len(payload) + payload

    def _parse(self) -> None:
        buf = self._buf
        while True:
            if self._body_length is None:
                end = buf.find(b"\r\n\r\n", max(0, self._scanned - 3))
                if end < 0:
                    if len(buf) >= self._header_limit:
                        raise self._header_too_long()
                    self._scanned = len(buf)
                    return
                if end + 4 > self._header_limit:
                    raise self._header_too_long()
                self._body_length = self._content_length(bytes(buf[:end]))
                del buf[: end + 4]
                self._scanned = 0
            if len(buf) < self._body_length:
                return
            self._frames.append(_take(buf, 0, self._body_length))
            del buf[: self._body_length]
            self._body_length = None

    def _partial(self) -> bool:
        return bool(self._buf) or self._body_length is not None

    def _header_too_long(self) -> ProtocolError:
        return ProtocolError(
            f"header block longer than {self._header_limit} bytes",
            data={"header_limit": self._header_limit},
        )

    def _content_length(self, block: bytes) -> int:
        length: int | None = None
        for line in block.split(b"\r\n"):
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip():
                raise ProtocolError(f"malformed header line {line[:80]!r}")
            if name.lower() != b"content-length":
                continue
            value = value.strip(b" \t")
            if length is not None:
                raise ProtocolError("repeated Content-Length header")
            if not value.isdigit() or len(value) > 20:
                raise ProtocolError(f"bad Content-Length value {value[:40]!r}")
            length = int(value)
        if length is None:
            raise ProtocolError("missing Content-Length header")
        if length > self._limit:
            raise self._too_large(length)
        return length


class LengthPrefixFramer(_BufferedFramer):
    """A 4-byte big-endian unsigned length, then that many bytes; empty frames are allowed."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit > _MAX_PREFIXED:
            raise ValueError(f"a 4-byte prefix cannot carry a limit of {limit} bytes")
        super().__init__(limit)

    def encode(self, payload: bytes) -> bytes:
        """The payload's length as 4 big-endian bytes, then ``payload``."""
        self._check_payload(payload)
        return len(payload).to_bytes(4, "big") + payload

    def _parse(self) -> None:
        buf = self._buf
        pos = 0
        try:
            while len(buf) - pos >= 4:
                length = int.from_bytes(buf[pos : pos + 4], "big")
                if length > self._limit:
                    raise self._too_large(length)
                if len(buf) - pos - 4 < length:
                    return
                self._frames.append(_take(buf, pos + 4, pos + 4 + length))
                pos += 4 + length
        finally:
            del buf[:pos]
