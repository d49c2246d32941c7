"""What a session's inbox carries besides the core's inputs: requests with their replies, and
notices from the tasks beside the loop (``actors.session.actor``); and the replies it owes.

The core's own inputs (``actors.session.messages.Input``: notices about the harness child, a
stop) travel in the same inbox; ``Message`` is the union of everything the loop takes. A
``Call`` the loop takes becomes the core's ``Request`` under a number (``Replies.owe``); the
core's ``Answer`` of that number is the reply (``Replies.pay``).
"""

from __future__ import annotations

import itertools

import msgspec

from actors.session.messages import Input
from protocol.errors import StorageFailed
from protocol.events import Event
from protocol.messages import ClientRequest, Empty
from supervisor.tree.mailbox import Reply

__all__ = ["AfterResultReady", "Announce", "Call", "LogBroken", "Message", "Replies"]


class Call(msgspec.Struct, frozen=True):
    """A client request in the session's inbox, with its one-shot reply."""

    request: ClientRequest
    by: str
    reply: Reply[msgspec.Struct]
    by_name: str = ""


class Announce(msgspec.Struct, frozen=True):
    """An event from outside the session (``announce``) for its log; ``reply`` once appended."""

    event: Event
    reply: Reply[msgspec.Struct]


class AfterResultReady(msgspec.Struct, frozen=True):
    """A run of the after-result hook left events to append (``AfterResults.take``)."""


class LogBroken(msgspec.Struct, frozen=True):
    """The log's flusher failed: the loop raises ``error`` (and the session ends failed)."""

    error: StorageFailed


Message = Call | Input | LogBroken | Announce | AfterResultReady
"""Everything the session's loop takes from its inbox."""


class Replies:
    """The replies a session's loop owes: one per ``Call`` it took, until the core answers."""

    def __init__(self) -> None:
        self._owed: dict[int, Reply[msgspec.Struct]] = {}
        self._numbers = itertools.count(1)

    def owe(self, reply: Reply[msgspec.Struct]) -> int:
        """The number the core's ``Request`` carries for the call ``reply`` answers."""
        call = next(self._numbers)
        self._owed[call] = reply
        return call

    def pay(self, call: int, result: msgspec.Struct | None, error: Exception | None) -> None:
        """Answer call ``call`` with ``error``, else ``result`` (``Empty`` if none); a call
        already failed (its caller gone) is skipped."""
        reply = self._owed.pop(call, None)
        if reply is not None and error is not None:
            reply.fail(error)
        elif reply is not None:
            reply.send(result or Empty())

    def fail_all(self, error: Exception) -> None:
        """Fail every reply still owed with ``error`` (the session ended)."""
        for reply in self._owed.values():
            reply.fail(error)
        self._owed.clear()
