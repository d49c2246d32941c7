"""Keeping output bounded: a head+tail byte capture for streams, and clipping finished text.

Both keep the beginning and the end, because that is where a build log or a stack trace says
what happened, and mark the middle with ``[… N bytes elided …]`` so the model knows it is gone.
"""

from __future__ import annotations


def elision(count: int) -> str:
    """The marker that stands where ``count`` bytes were dropped."""
    return f"\n[… {count} bytes elided …]\n"


def clip(text: str, max_bytes: int) -> tuple[str, bool]:
    """``text`` cut to about ``max_bytes`` of UTF-8 (head and tail kept); whether it was cut."""
    data = text.encode()
    if len(data) <= max_bytes:
        return text, False
    keep = max(max_bytes - 64, 0)
    head, tail = keep // 2, keep - keep // 2
    dropped = len(data) - head - tail
    tail_bytes = data[len(data) - tail :] if tail else b""
    return (
        data[:head].decode(errors="ignore") + elision(dropped) + tail_bytes.decode(errors="ignore"),
        True,
    )


class HeadTail:
    """A byte sink that keeps the first ``head`` and last ``tail`` bytes written to it.

    Memory stays under ``head + 2 * tail`` however much is written.
    """

    def __init__(self, head: int, tail: int) -> None:
        self._head_max = head
        self._tail_max = tail
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def write(self, data: bytes) -> None:
        """Take the next chunk of the stream."""
        self.total += len(data)
        room = self._head_max - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        self._tail += data
        if len(self._tail) > 2 * self._tail_max:
            del self._tail[: len(self._tail) - self._tail_max]

    @property
    def retained(self) -> int:
        """Bytes held in memory right now."""
        return len(self._head) + len(self._tail)

    @property
    def elided(self) -> int:
        """Bytes that fell between head and tail."""
        return max(self.total - len(self._head) - self._tail_max, 0)

    def text(self) -> str:
        """The captured stream as text, with the elision marker where bytes were dropped."""
        tail = bytes(self._tail[-self._tail_max :]) if self._tail_max else b""
        if not self.elided:
            return (bytes(self._head) + bytes(self._tail)).decode(errors="replace")
        # Start the tail on a character boundary rather than mid-way through a UTF-8 sequence.
        start = 0
        while start < min(len(tail), 3) and tail[start] & 0xC0 == 0x80:
            start += 1
        return (
            bytes(self._head).decode(errors="replace")
            + elision(self.elided)
            + tail[start:].decode(errors="replace")
        )
