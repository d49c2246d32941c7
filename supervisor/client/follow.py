"""Follow one session across dropped connections: reconnect with backoff, resume from last + 1.

``follow_session`` is a context manager rather than an async generator because it owns a
task (the connection loop) and trio forbids yielding out of a nursery in a generator. The
loop sends each event frame into a small channel the caller iterates; backpressure from a
slow caller reaches the daemon, which cuts the subscription with ``lagged``, and the client
resubscribes by itself. A connection that drops (``ConnectionLost``) or a daemon that is
not running (``DaemonNotRunning``) is retried; any other error ends the follow and is
raised out of the ``async with`` block.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from pathlib import Path

import trio

from protocol.errors import DaemonNotRunning

from supervisor.client.connect import open_client
from supervisor.client.subscription import RawEventFrame
from supervisor.excgroup import raise_lone

__all__ = ["follow_session"]

RETRY_FIRST = 0.1
RETRY_MAX = 2.0


@asynccontextmanager
async def follow_session(state_dir: Path | str | None, session_id: str, from_seq: int = 1, *,
                         on_retry: Callable[[DaemonNotRunning, float], None] | None = None,
                         retry_first: float = RETRY_FIRST, retry_max: float = RETRY_MAX,
                         ) -> AsyncIterator[trio.MemoryReceiveChannel[RawEventFrame]]:
    """A channel of the session's event frames from ``from_seq`` on, surviving reconnects.

    Each seq is delivered once, in order. ``on_retry(error, delay)`` is told before each wait
    (the first connection included, so a caller can say the daemon is down). The delay starts
    at ``retry_first`` and doubles up to ``retry_max``; it goes back to the start once a
    connection delivers an event. Leaving the block cancels the loop and closes its connection.
    """
    send, receive = trio.open_memory_channel[RawEventFrame](16)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_loop, send, state_dir, session_id, from_seq, on_retry,
                               retry_first, retry_max)
            try:
                yield receive
            finally:
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise_lone(group)


async def _loop(send: trio.MemorySendChannel[RawEventFrame], state_dir: Path | str | None,
                session_id: str, next_seq: int,
                on_retry: Callable[[DaemonNotRunning, float], None] | None,
                retry_first: float, retry_max: float) -> None:
    delay = retry_first
    async with send:
        while True:
            try:
                async with open_client(state_dir) as client:
                    events = client.raw_events(session_id, next_seq, follow=True)
                    async with aclosing(events) as frames:
                        async for item in frames:
                            await send.send(item)
                            next_seq = item.seq + 1
                            delay = retry_first
            except DaemonNotRunning as exc:
                if on_retry is not None:
                    on_retry(exc, delay)
                await trio.sleep(delay)
                delay = min(delay * 2, retry_max)
