"""The notifier actor: follows every session's events and posts notices to the ``[[notify]]`` URLs.

Owns one cursor per session it follows and one bounded queue per target. Takes no messages:
``watch`` (called by the session table as a session starts or resumes) makes it listen to the
session's ``Feed``, whose wake-up (run in the session's task) only marks the session as having
news. The actor's reader task then reads the new event frames from the feed, turns them into
``Notice``s (``actors.notify.compose``) and offers each to the targets that want it; a sender
task per target posts them one at a time. So a session never waits for a notification: its
publish costs one dict entry; a slow, dead or refusing endpoint only fills its own queue, which
drops its oldest notice when full (counted, with a warning in the log).

A post is bounded: ``timeout`` seconds an attempt, then up to ``retries`` more attempts after
``backoff``, twice that, … seconds; a notice that still failed is given up with one warning line
(the URL masked, never its headers). A status of 2xx is a success.

Restart type ``permanent`` (a child of the daemon's root, present only when ``[[notify]]`` is
configured); its state is only cursors and queued notices, so a restart loses at most those.
"""

from __future__ import annotations

import logging
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Protocol
from urllib.parse import urlsplit

import msgspec
import trio

from actors.notify.compose import Notice, Watch, render, wanted
from actors.notify.config import NotifyTarget, masked
from protocol.messages import EventFrame

__all__ = ["FeedLike", "Notifier", "NotifierStats", "Post", "post"]

log = logging.getLogger("corral.notify")

Post = Callable[[NotifyTarget, Sequence[tuple[str, str]], bytes], Awaitable[int]]
"""Sends one POST to a target's URL and returns the answer's status (raises on no answer)."""

_decode = msgspec.json.Decoder(EventFrame).decode


class FeedLike(Protocol):
    """What the notifier needs of a session's feed (``actors.session.feed.Feed``)."""

    @property
    def last_seq(self) -> int: ...

    def read_from(self, from_seq: int) -> Iterator[bytes]: ...

    def listen(self, wake: Callable[[], None]) -> None: ...


class NotifierStats(msgspec.Struct, frozen=True, kw_only=True):
    """Counters since the notifier started, over every target."""

    queued: int = 0
    sent: int = 0
    retries: int = 0
    failed: int = 0  # notices given up after every attempt
    dropped: int = 0  # notices pushed out of a full queue


class Notifier:
    """The notifier (see the module docstring); ``page`` gives a session's page URL."""

    def __init__(self, targets: Sequence[NotifyTarget], page: Callable[[str], str], *,
                 queue_size: int = 64, timeout: float = 10.0, retries: int = 3,
                 backoff: float = 1.0, send: Post | None = None) -> None:
        self.page = page
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._send: Post = send or post
        self._senders = [_Sender(target, queue_size) for target in targets]
        self._followed: dict[str, _Followed] = {}
        self._news: dict[str, None] = {}
        self._woken = trio.Event()
        self._counts = {"queued": 0, "sent": 0, "retries": 0, "failed": 0, "dropped": 0}

    def watch(self, session_id: str, name: str | None, harness: str, feed: FeedLike) -> None:
        """Follow a session's events from now on (again after a resume: the same feed goes on)."""
        if session_id in self._followed and self._followed[session_id].feed is feed:
            return
        followed = _Followed(feed, feed.last_seq, Watch(session_id, name, harness, self.page(session_id)))
        self._followed[session_id] = followed
        feed.listen(lambda: self._wake(session_id))

    def statistics(self) -> NotifierStats:
        return NotifierStats(**self._counts)

    async def run(self, *, task_status: trio.TaskStatus[Notifier] = trio.TASK_STATUS_IGNORED) -> None:
        """Read the feeds and post to every target until cancelled. Cancellation drops what is
        queued (notifications are best effort) and abandons a post in flight."""
        async with trio.open_nursery() as nursery:
            for sender in self._senders:
                nursery.start_soon(self._deliver, sender)
            task_status.started(self)
            while True:
                await self._woken.wait()
                self._woken = trio.Event()
                news, self._news = self._news, {}
                for session_id in news:
                    self._read(self._followed[session_id])
                await trio.lowlevel.checkpoint()

    def offer(self, notice: Notice) -> None:
        """Queue ``notice`` for every target that wants it (never blocks)."""
        for sender in self._senders:
            if wanted(sender.target, notice):
                self._counts["queued"] += 1
                if sender.put(notice):
                    self._counts["dropped"] += 1

    async def post_once(self, target: NotifyTarget, notice: Notice) -> int:
        """One bounded attempt: the answer's status (raises ``OSError``/``ProtocolError``, or
        ``TimeoutError`` after ``timeout`` seconds)."""
        headers, body = render(target, notice)
        with trio.fail_after(self.timeout):
            return await self._send(target, headers, body)

    # --- internals ---------------------------------------------------------------------------

    def _wake(self, session_id: str) -> None:
        """The feed's listener, run in the session's task: note the news, never block."""
        self._news[session_id] = None
        self._woken.set()

    def _read(self, followed: _Followed) -> None:
        try:
            for data in followed.feed.read_from(followed.cursor + 1):
                frame = _decode(data)
                followed.cursor = frame.seq
                notice = followed.watch.offer(frame.event)
                if notice is not None:
                    self.offer(notice)
        except Exception as exc:  # noqa: BLE001 - a log we cannot read must not stop the daemon's notifier
            log.warning("notify: session %s: events %d to %d skipped: %s", followed.watch.session_id,
                        followed.cursor + 1, followed.feed.last_seq, " ".join(str(exc).split()))
            followed.cursor = followed.feed.last_seq

    async def _deliver(self, sender: _Sender) -> None:
        while True:
            notice = await sender.get()
            failure = ""
            for attempt in range(self.retries + 1):
                if attempt:
                    self._counts["retries"] += 1
                    await trio.sleep(self.backoff * 2 ** (attempt - 1))
                try:
                    status = await self.post_once(sender.target, notice)
                except Exception as exc:  # noqa: BLE001 - any failure of the endpoint is retried
                    failure = _why(exc)
                    continue
                if 200 <= status < 300:
                    self._counts["sent"] += 1
                    break
                failure = f"answered {status}"
            else:
                self._counts["failed"] += 1
                log.warning("notify: %s: gave up on a %s notification after %d attempts: %s",
                            masked(sender.target.url), notice.event, self.retries + 1, failure)


class _Followed:
    def __init__(self, feed: FeedLike, cursor: int, watch: Watch) -> None:
        self.feed = feed
        self.cursor = cursor
        self.watch = watch


class _Sender:
    """One target's bounded queue: a full one drops its oldest notice."""

    def __init__(self, target: NotifyTarget, size: int) -> None:
        self.target = target
        self._queue: deque[Notice] = deque()
        self._size = size
        self._ready = trio.Event()
        self._dropped = 0
        self._warned = False

    def put(self, notice: Notice) -> bool:
        """Queue ``notice``; True when that dropped the oldest one."""
        dropped = len(self._queue) >= self._size
        if dropped:
            self._queue.popleft()
            self._dropped += 1
            if not self._warned:  # once per spell of a full queue, with the count so far
                self._warned = True
                log.warning("notify: %s: queue full (%d); dropping the oldest notifications "
                            "(%d dropped so far)", masked(self.target.url), self._size, self._dropped)
        self._queue.append(notice)
        self._ready.set()
        return dropped

    async def get(self) -> Notice:
        while not self._queue:
            self._warned = False
            self._ready = trio.Event()
            await self._ready.wait()
        return self._queue.popleft()


async def post(target: NotifyTarget, headers: Sequence[tuple[str, str]], body: bytes) -> int:
    """POST ``body`` to ``target.url`` on a connection of its own; the answer's status."""
    # The h11 client is loaded with the first notification.
    from actors.vendors.opencode.http import HttpClient

    url = urlsplit(target.url)
    tls = ssl.create_default_context() if url.scheme == "https" else None
    port = url.port or (443 if tls is not None else 80)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    client = HttpClient(url.hostname or "", port, tls=tls, limit=1 << 16,
                        password=url.password, user=url.username or "")
    try:
        status, _ = await client.request("POST", path, body, headers=headers)
    finally:
        await client.aclose()
    return status


def _why(exc: BaseException) -> str:
    if isinstance(exc, trio.TooSlowError):
        return "no answer in time"
    return " ".join(str(exc).split()) or type(exc).__name__
