"""What a session needs from the daemon (``SessionDeps``), and where its blocking file work runs.

``actors.session.sessions`` builds one per session; ``actors.session.actor.Session`` reads it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import trio

from actors.session.config import SessionsConfig
from supervisor.proc.config import ChildrenConfig

__all__ = ["Offload", "SessionDeps", "in_thread"]

T = TypeVar("T")
Offload = Callable[[Callable[[], T]], Awaitable[T]]
"""Runs a blocking call away from the trio thread and returns its result."""


class SessionDeps(msgspec.Struct, frozen=True, kw_only=True):
    """What a session needs from the daemon: its driver, settings, ledger and directory.

    ``offload`` runs blocking file work (``meta.json`` writes, the log's final close) away from
    the trio thread, by default in a worker thread (``in_thread``); tests run it inline to keep
    virtual time exact. ``rng`` draws the restart backoff's jitter. ``after_result``, if set, is
    an async function of the session id run after each turn's ``result`` (off the loop,
    bounded); the event it returns, if any, is appended to the session's log. ``observer``, if
    set, is handed every event as it is appended (``actors.telemetry.Observer.observe``).
    """

    driver: Any  # actors.harness.Driver; Any because Protocols are not msgspec types
    sessions: SessionsConfig
    children: ChildrenConfig
    ledger: Any  # supervisor.ledger.store.Ledger
    directory: Path
    offload: Any = None
    rng: Any = None
    after_result: Any = None  # Callable[[str], Awaitable[Event | None]]
    observer: Any = None  # actors.telemetry.observer.Observer
    opener: Any = None
    """A placement backend's ``open`` (``actors.session.child``); ``None``: children run here."""


async def in_thread(call: Callable[[], T]) -> T:
    """The default ``Offload``: ``call`` in a trio worker thread (cancellation waits for it)."""
    return await trio.to_thread.run_sync(call)
