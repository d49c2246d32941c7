"""The notifier actor under virtual time: retries and backoff, give-up, drop-oldest, and a real
session (in memory, ``ScriptedDriver``) whose events it follows without ever holding them up."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing

from actors.notify.compose import Notice
from actors.notify.config import NotifyTarget
from actors.notify.delivery import Notifier, NotifierStats
from protocol import events as ev
from protocol.errors import StorageFailed
from protocol.messages import EventFrame
from supervisor.proc.spec import ExitStatus
from tests.actors.session.scripted import ScriptedDriver
from tests.actors.session.test_actor import SID, make_session, until

URL = "http://127.0.0.1:9/hook?token=secret"


def notice(n: int = 1, event: str = "permission") -> Notice:
    return Notice(event=event, session_id="s-1", name=None, harness="fake", text=f"n{n}", url="u")


class Endpoint:
    """A scripted ``Post``: each attempt's outcome in turn (an exception or a status; ``None``
    hangs until ``release``); records the time and body of every attempt."""

    def __init__(self, *outcomes: int | BaseException | None) -> None:
        self.outcomes = list(outcomes)
        self.times: list[float] = []
        self.bodies: list[dict[str, object]] = []
        self.released = trio.Event()
        self._attempted = trio.Event()

    async def __call__(self, target: NotifyTarget, headers: Sequence[tuple[str, str]], body: bytes) -> int:
        self.times.append(trio.current_time())
        self.bodies.append(json.loads(body))
        self._attempted.set()
        self._attempted = trio.Event()
        outcome = self.outcomes.pop(0) if self.outcomes else 200
        if outcome is None:
            await self.released.wait()
            return 200
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    async def attempts(self, count: int) -> None:
        with trio.fail_after(600):
            while len(self.times) < count:
                await self._attempted.wait()


async def test_a_failing_endpoint_is_retried_three_times_with_backoff(autojump_clock: trio.testing.MockClock) -> None:
    endpoint = Endpoint(OSError("refused"), 503, OSError("reset"), 200)
    notifier = Notifier([NotifyTarget(url=URL)], str, send=endpoint)
    async with trio.open_nursery() as nursery:
        await nursery.start(notifier.run)
        start = trio.current_time()
        notifier.offer(notice())
        await endpoint.attempts(4)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert [t - start for t in endpoint.times] == [0.0, 1.0, 3.0, 7.0]
    assert notifier.statistics() == NotifierStats(queued=1, sent=1, retries=3)


async def test_after_the_last_retry_one_warning_names_the_masked_url(
        autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture) -> None:
    endpoint = Endpoint(500, 500, 500, 500)
    target = NotifyTarget(url=URL, headers={"Authorization": "Bearer hunter2"})
    notifier = Notifier([target], str, send=endpoint)
    with caplog.at_level(logging.WARNING, logger="corral.notify"):
        async with trio.open_nursery() as nursery:
            await nursery.start(notifier.run)
            notifier.offer(notice())
            await endpoint.attempts(4)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert notifier.statistics() == NotifierStats(queued=1, retries=3, failed=1)
    [record] = caplog.records
    assert record.getMessage() == ("notify: http://127.0.0.1:9/hook?token=***: gave up on a permission "
                                   "notification after 4 attempts: answered 500")


async def test_an_endpoint_that_never_answers_times_out_each_attempt(autojump_clock: trio.testing.MockClock) -> None:
    endpoint = Endpoint(None, None, None, None)
    notifier = Notifier([NotifyTarget(url=URL)], str, send=endpoint, timeout=10.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(notifier.run)
        start = trio.current_time()
        notifier.offer(notice())
        await endpoint.attempts(4)
        await trio.sleep(11)  # past the last attempt's timeout
        nursery.cancel_scope.cancel()
    assert [t - start for t in endpoint.times] == [0.0, 11.0, 23.0, 37.0]
    assert notifier.statistics().failed == 1


async def test_a_full_queue_drops_its_oldest_notice_and_warns_once(
        autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture) -> None:
    endpoint = Endpoint(None)  # the first post hangs: the rest queue up behind it
    notifier = Notifier([NotifyTarget(url=URL)], str, send=endpoint, queue_size=2, timeout=1000.0)
    with caplog.at_level(logging.WARNING, logger="corral.notify"):
        async with trio.open_nursery() as nursery:
            await nursery.start(notifier.run)
            notifier.offer(notice(1))
            await endpoint.attempts(1)
            for n in range(2, 7):
                notifier.offer(notice(n))
            assert notifier.statistics().dropped == 3
            endpoint.released.set()
            await endpoint.attempts(3)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert [b["text"] for b in endpoint.bodies] == ["n1", "n5", "n6"]
    assert notifier.statistics() == NotifierStats(queued=6, sent=3, dropped=3)
    [record] = caplog.records
    assert "queue full (2); dropping the oldest notifications (1 dropped so far)" in record.getMessage()


async def test_a_session_notifies_slow_turns_permissions_and_its_failure_without_waiting(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    """min_turn_s on the turn's own duration (the session's clock); a hung endpoint never holds
    the session up: its whole life is logged while the first post still hangs."""
    hung = Endpoint(None)
    fine = Endpoint()
    targets = [NotifyTarget(url="http://127.0.0.1:1/hung"),
               NotifyTarget(url="http://127.0.0.1:2/slow-turns", min_turn_s=5.0)]
    posts = {targets[0].url: hung, targets[1].url: fine}

    async def send(target: NotifyTarget, headers: Sequence[tuple[str, str]], body: bytes) -> int:
        return await posts[target.url](target, headers, body)

    notifier = Notifier(targets, lambda sid: f"http://127.0.0.1:7433/#{sid}", send=send, timeout=1e6)
    driver = ScriptedDriver()
    session = make_session(tmp_path, driver, restart_intensity=0)
    async with trio.open_nursery() as nursery:
        await nursery.start(notifier.run)
        notifier.watch(SID, "job", "scripted", session.feed)
        await nursery.start(session.run)
        [child] = driver.children
        for seconds in (4.0, 5.0):  # a 4 s turn, then a 5 s one
            await session.prompt("go", "c-1")
            await child.next_command()
            await trio.sleep(seconds)
            child.emit(type="result", stop_reason="end_turn")
            await until(session, lambda e, n=seconds: isinstance(e, ev.Result) and e.duration_ms == n * 1000)
        await session.prompt("ask", "c-1")
        await child.next_command()
        child.emit(type="permission", permission_id="p1", tool="bash", input={"command": "make"})
        await until(session, lambda e: isinstance(e, ev.Permission))
        child.die(ExitStatus(reason="exited", exit_code=3))
        await session.closed.wait()
        assert len(hung.times) == 1  # still on its first post, while the session ended
        await fine.attempts(3)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert [(b["event"], b["text"]) for b in fine.bodies] == [
        ("turn_done", "job: turn is done (end_turn, 5 s)"),
        ("permission", "job asks to run bash: make"),
        ("session_failed", "job failed: " + next(e.message for e in reversed(
            [f.event for f in session.log.frames_from(1)]) if isinstance(e, ev.Error))),
    ]
    assert fine.bodies[0]["session"] == {"id": SID, "name": "job", "harness": "scripted"}
    assert fine.bodies[0]["url"] == f"http://127.0.0.1:7433/#{SID}"
    assert hung.bodies[0]["event"] == "turn_done"  # the 4 s turn: this target takes any turn


class ListFeed:
    """A feed over a list of frames; ``broken``: its first read fails as a damaged log would."""

    def __init__(self, *, broken: bool = False) -> None:
        self.frames: list[bytes] = []
        self.broken = broken
        self.listeners: list[Callable[[], None]] = []

    @property
    def last_seq(self) -> int:
        return len(self.frames)

    def read_from(self, from_seq: int) -> Iterator[bytes]:
        if self.broken:
            self.broken = False
            raise StorageFailed("events.jsonl: bad line")
        return iter(self.frames[from_seq - 1:])

    def listen(self, wake: Callable[[], None]) -> None:
        self.listeners.append(wake)

    def publish(self, event: ev.Event) -> None:
        seq = len(self.frames) + 1
        self.frames.append(msgspec.json.encode(EventFrame(session_id="s-9", seq=seq, ts="t", event=event)))
        for wake in self.listeners:
            wake()


async def test_a_log_that_cannot_be_read_skips_those_events_and_goes_on(
        autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture) -> None:
    endpoint = Endpoint()
    notifier = Notifier([NotifyTarget(url=URL)], str, send=endpoint)
    feed = ListFeed(broken=True)
    with caplog.at_level(logging.WARNING, logger="corral.notify"):
        async with trio.open_nursery() as nursery:
            await nursery.start(notifier.run)
            notifier.watch("s-9", None, "fake", feed)
            feed.publish(ev.Permission(permission_id="p1", tool="lost"))
            await trio.testing.wait_all_tasks_blocked()
            feed.publish(ev.Permission(permission_id="p2", tool="seen"))
            await endpoint.attempts(1)
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    assert [b["text"] for b in endpoint.bodies] == ["s-9 asks to run seen"]
    [record] = caplog.records
    assert record.getMessage() == "notify: session s-9: events 1 to 1 skipped: events.jsonl: bad line"


async def test_a_resumed_session_is_followed_once_from_where_it_was(autojump_clock: trio.testing.MockClock) -> None:
    """A resume hands the notifier the same feed again (``SessionTable`` rebinds it): no second
    listener, so no notice twice; what the log held before the first watch is not notified."""
    endpoint = Endpoint()
    notifier = Notifier([NotifyTarget(url=URL)], str, send=endpoint)
    feed = ListFeed()
    feed.publish(ev.Permission(permission_id="p0", tool="before"))
    async with trio.open_nursery() as nursery:
        await nursery.start(notifier.run)
        notifier.watch("s-9", None, "fake", feed)
        feed.publish(ev.Permission(permission_id="p1", tool="first"))
        await endpoint.attempts(1)
        notifier.watch("s-9", None, "fake", feed)  # resumed
        assert len(feed.listeners) == 1
        feed.publish(ev.Permission(permission_id="p2", tool="second"))
        await endpoint.attempts(2)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert [b["text"] for b in endpoint.bodies] == ["s-9 asks to run first", "s-9 asks to run second"]
