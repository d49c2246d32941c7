"""A connection's bounded outgoing queue: events are dropped into ``lagged``, answers never.

Event frames count against ``capacity``; a subscription whose event does not fit is lagged:
its queued events are removed and one ``lagged`` marker takes their place, whose ``last_seq``
is filled in when it is written (the seq of the last event of that session actually sent).
Control frames (responses, errors, ``lagged``) bypass the capacity up to ``hard_limit``, past
which the client is not reading at all and the connection must go (``QueueOverflow``).

Pure data: no trio, no waiting. The connection core (``connection_core.py``) owns one and tells
its I/O shell when it changed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["Item", "OutQueue", "QueueOverflow"]


class QueueOverflow(Exception):
    """The client stopped reading even its responses; the connection must go."""


@dataclass(slots=True)
class Item:
    """One queued frame: an encoded frame, or a lagged marker (``frame is None``)."""

    frame: bytes | None
    session_id: str | None = None
    seq: int = 0


class OutQueue:
    """FIFO of outgoing frames with per-session lag accounting."""

    def __init__(self, capacity: int, hard_limit: int | None = None) -> None:
        self.capacity = capacity
        self.hard_limit = hard_limit if hard_limit is not None else 4 * capacity + 64
        self._items: deque[Item] = deque()
        self._events = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def events_queued(self) -> int:
        return self._events

    def has_room(self) -> bool:
        """True when one more event frame fits."""
        return self._events < self.capacity

    def put_event(self, session_id: str, seq: int, frame: bytes) -> bool:
        """Queue an event frame; ``False`` (nothing queued) when it does not fit."""
        if not self.has_room():
            return False
        self._items.append(Item(frame, session_id, seq))
        self._events += 1
        return True

    def put_control(self, frame: bytes) -> None:
        """Queue a response or error frame; raises ``QueueOverflow`` past the hard limit."""
        if len(self._items) >= self.hard_limit:
            raise QueueOverflow(f"{len(self._items)} frames queued for a client that does not read")
        self._items.append(Item(frame))

    def put_lagged(self, session_id: str) -> None:
        """Drop the session's queued events and queue its ``lagged`` marker."""
        self.drop_session(session_id)
        self._items.append(Item(None, session_id))

    def drop_session(self, session_id: str, *, markers: bool = False) -> None:
        """Remove every queued event of one session (and its ``lagged`` marker if ``markers``:
        a client that subscribes again or unsubscribes no longer needs to hear it lagged)."""
        kept = deque(i for i in self._items
                     if i.session_id != session_id or (i.frame is None and not markers))
        self._events -= sum(1 for i in self._items if i.frame is not None and i.session_id == session_id)
        self._items = kept

    def pop(self) -> Item | None:
        """The next frame to write, or ``None`` when nothing is queued."""
        if not self._items:
            return None
        item = self._items.popleft()
        if item.frame is not None and item.session_id is not None:
            self._events -= 1
        return item
