"""The worker's side of its asks to the daemon (``protocol.native.Ask``): one frame each way.

``DaemonLink.ask(make)`` gives the ask a fresh id, sends it, and waits (bounded) for the
answer with that id, which the worker's stdin loop hands to ``answer``. Answers may come in any
order; an answer nobody waits for any more (its ask timed out or was cancelled) is dropped.
``close`` fails every waiting ask with ``LinkClosed`` (the worker is shutting down).

Why asks rather than a client of our own: the MCP servers and language servers are shared by
every session and belong to the daemon's supervision tree, so the worker holds no connection
that its death could break, and a server's death reaches it only as an error answer.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import TypeVar

from protocol.native import Answer, Ask

__all__ = ["DaemonLink", "LinkClosed", "LinkTimeout"]

A = TypeVar("A", bound=Answer)


class LinkClosed(Exception):
    """The worker is shutting down: no answer will come."""


class LinkTimeout(Exception):
    """The daemon gave no answer in time."""


class DaemonLink:
    """Sends asks with ``send`` and matches the answers to them."""

    def __init__(self, send: Callable[[Ask], None]) -> None:
        self._send = send
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Answer]] = {}
        self._closed = False

    async def ask(self, make: Callable[[int], Ask], expect: type[A], timeout: float) -> A:
        """Send ``make(id)`` and return its answer; ``LinkTimeout`` after ``timeout`` seconds,
        ``LinkClosed`` once the link is closed. Cancellation abandons the ask."""
        if self._closed:
            raise LinkClosed("the worker is shutting down")
        ask_id = next(self._ids)
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting[ask_id] = future
        try:
            self._send(make(ask_id))
            async with asyncio.timeout(timeout):
                answer = await future
        except TimeoutError:
            raise LinkTimeout(f"the daemon gave no answer within {timeout:g} s") from None
        finally:
            self._waiting.pop(ask_id, None)
        if not isinstance(answer, expect):
            raise LinkClosed(f"the daemon answered {type(answer).__name__}, not {expect.__name__}")
        return answer

    def answer(self, answer: Answer) -> None:
        """Hand ``answer`` to the ask waiting for it (dropped if none is)."""
        future = self._waiting.get(answer.id)
        if future is not None and not future.done():
            future.set_result(answer)

    def close(self) -> None:
        """Fail every waiting ask with ``LinkClosed``; later asks fail at once."""
        self._closed = True
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(LinkClosed("the worker is shutting down"))
        self._waiting.clear()
