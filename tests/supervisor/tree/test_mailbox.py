"""The mailbox: bounded, request/reply with exact timeouts, ActorGone instead of a hang."""

from __future__ import annotations

import math

import msgspec
import pytest
import trio
import trio.testing

from protocol.errors import ActorGone, ErrorCode, SessionBusy, Timeout
from supervisor.tree.mailbox import Mailbox, MailboxFull, MailboxStats, Reply


class Note(msgspec.Struct, frozen=True):
    text: str


class Ask(msgspec.Struct, frozen=True):
    question: str
    reply: Reply[str]


Msg = Note | Ask


async def answering_actor(inbox: Mailbox[Msg], delay: float = 0.0) -> None:
    async with inbox:
        async for msg in inbox:
            if isinstance(msg, Ask):
                await trio.sleep(delay)
                msg.reply.send(msg.question.upper())


class AskFactory:
    """Builds the request message and keeps its reply, so a test can answer late."""

    def __init__(self, question: str) -> None:
        self.question = question
        self.reply: Reply[str] | None = None

    def __call__(self, reply: Reply[str]) -> Ask:
        self.reply = reply
        return Ask(self.question, reply)


def ask(question: str) -> AskFactory:
    return AskFactory(question)


async def test_messages_arrive_in_order_and_stats_count_them() -> None:
    box: Mailbox[Msg] = Mailbox(3, name="box")
    await box.send(Note("a"))
    box.send_nowait(Note("b"))
    assert box.statistics() == MailboxStats(
        name="box", depth=2, max_size=3, waiting_senders=0, waiting_receivers=0,
        pending_requests=0, sent=2, received=0, dropped=0, closed=False,
    )
    assert await box.receive() == Note("a")
    assert await box.receive() == Note("b")
    stats = box.statistics()
    assert (stats.depth, stats.sent, stats.received) == (0, 2, 2)


async def test_receive_nowait_takes_what_is_buffered_and_never_waits() -> None:
    box: Mailbox[Msg] = Mailbox(3)
    with pytest.raises(trio.WouldBlock):
        box.receive_nowait()
    box.send_nowait(Note("a"))
    box.send_nowait(Note("b"))
    assert [box.receive_nowait(), box.receive_nowait()] == [Note("a"), Note("b")]
    assert box.statistics().received == 2
    box.close()
    with pytest.raises(trio.EndOfChannel):
        box.receive_nowait()


async def test_send_nowait_on_a_full_mailbox_is_a_typed_error() -> None:
    box: Mailbox[Msg] = Mailbox(1)
    box.send_nowait(Note("a"))
    with pytest.raises(MailboxFull) as info:
        box.send_nowait(Note("b"))
    assert isinstance(info.value, Timeout)
    assert info.value.code is ErrorCode.TIMEOUT
    assert box.statistics().depth == 1


async def test_send_waits_for_room_until_its_timeout(autojump_clock: trio.testing.MockClock) -> None:
    box: Mailbox[Msg] = Mailbox(1)
    box.send_nowait(Note("a"))
    with pytest.raises(Timeout):
        await box.send(Note("b"), timeout=1.5)
    assert trio.current_time() == 1.5
    assert box.statistics().depth == 1


async def test_blocked_sender_is_counted_and_proceeds_when_room_appears(
    autojump_clock: trio.testing.MockClock,
) -> None:
    box: Mailbox[Msg] = Mailbox(1)
    box.send_nowait(Note("a"))
    done = trio.Event()

    async def sender() -> None:
        await box.send(Note("b"), timeout=10)
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender)
        await trio.sleep(2)
        assert box.statistics().waiting_senders == 1
        assert await box.receive() == Note("a")
        await done.wait()
    assert trio.current_time() == 2
    assert await box.receive() == Note("b")


async def test_blocked_senders_go_in_order_and_a_cancelled_one_delivers_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    box: Mailbox[Msg] = Mailbox(1)
    box.send_nowait(Note("a"))
    scopes = {text: trio.CancelScope() for text in "bcd"}

    async def sender(text: str) -> None:
        with scopes[text]:
            await box.send(Note(text))

    async with trio.open_nursery() as nursery:
        for text in "bcd":
            nursery.start_soon(sender, text)
            await trio.sleep(1)  # blocked in this order
        assert box.statistics().waiting_senders == 3
        scopes["c"].cancel()
        await trio.sleep(1)
        assert box.statistics().waiting_senders == 2
        assert [await box.receive() for _ in range(3)] == [Note("a"), Note("b"), Note("d")]
    stats = box.statistics()
    assert (stats.depth, stats.waiting_senders, stats.sent, stats.received) == (0, 0, 3, 3)
    with pytest.raises(trio.WouldBlock):
        box.receive_nowait()


async def test_a_cancelled_receiver_is_not_handed_a_message(autojump_clock: trio.testing.MockClock) -> None:
    box: Mailbox[Msg] = Mailbox(4)
    with trio.move_on_after(1):
        await box.receive()
    assert box.statistics().waiting_receivers == 0
    box.send_nowait(Note("kept"))
    assert box.statistics().depth == 1
    assert box.receive_nowait() == Note("kept")


async def test_request_gets_the_actors_answer(autojump_clock: trio.testing.MockClock) -> None:
    box: Mailbox[Msg] = Mailbox(4, name="upper")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(answering_actor, box)
        assert await box.request(ask("hi"), timeout=5) == "HI"
        assert box.statistics().pending_requests == 0
        nursery.cancel_scope.cancel()
    assert trio.current_time() == 0


async def test_reply_fail_raises_the_actors_error_in_the_requester() -> None:
    box: Mailbox[Msg] = Mailbox(4)

    async def refusing() -> None:
        async for msg in box:
            if isinstance(msg, Ask):
                msg.reply.fail(SessionBusy("not now"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(refusing)
        with pytest.raises(SessionBusy, match="not now"):
            await box.request(ask("q"), timeout=5)
        nursery.cancel_scope.cancel()


async def test_request_times_out_exactly_and_a_late_answer_is_dropped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    box: Mailbox[Msg] = Mailbox(4)
    factory = ask("slow")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(answering_actor, box, 10.0)
        with pytest.raises(Timeout):
            await box.request(factory, timeout=2.5)
        assert trio.current_time() == 2.5
        assert box.statistics().pending_requests == 0
        assert factory.reply is not None and factory.reply.done
        await trio.sleep(10)
        assert factory.reply.send("late") is False
        nursery.cancel_scope.cancel()


async def test_request_to_a_closed_mailbox_is_actor_gone_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    box: Mailbox[Msg] = Mailbox(4, name="dead")
    box.close()
    with pytest.raises(ActorGone) as info:
        await box.request(ask("anyone?"), timeout=30)
    assert info.value.code is ErrorCode.ACTOR_GONE
    assert info.value.data == {"mailbox": "dead"}
    with pytest.raises(ActorGone):
        box.send_nowait(Note("x"))
    with pytest.raises(ActorGone):
        await box.send(Note("x"))
    assert trio.current_time() == 0


async def test_buffered_request_fails_when_the_actor_closes(autojump_clock: trio.testing.MockClock) -> None:
    box: Mailbox[Msg] = Mailbox(4)
    box.send_nowait(Note("never read"))

    async def close_later() -> None:
        await trio.sleep(2)
        box.close()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(close_later)
        with pytest.raises(ActorGone):
            await box.request(ask("q"), timeout=30)
    assert trio.current_time() == 2
    stats = box.statistics()
    assert (stats.closed, stats.dropped, stats.depth, stats.pending_requests) == (True, 2, 0, 0)


async def test_a_request_taken_but_unanswered_fails_when_the_actor_crashes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    box: Mailbox[Msg] = Mailbox(4)

    async def crashing_actor() -> None:
        async with box:
            await box.receive()
            await trio.sleep(3)
            raise RuntimeError("actor bug")

    outcome: list[BaseException] = []

    async def requester() -> None:
        try:
            await box.request(ask("q"), timeout=30)
        except ActorGone as exc:
            outcome.append(exc)

    with pytest.raises(ExceptionGroup) as group:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(requester)
            nursery.start_soon(crashing_actor)
    assert group.value.subgroup(RuntimeError) is not None
    assert len(outcome) == 1
    assert trio.current_time() == 3


async def test_a_sender_blocked_on_a_full_mailbox_gets_actor_gone_on_close(
    autojump_clock: trio.testing.MockClock,
) -> None:
    box: Mailbox[Msg] = Mailbox(0)

    async def close_later() -> None:
        await trio.sleep(1)
        box.close()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(close_later)
        with pytest.raises(ActorGone):
            await box.send(Note("x"), timeout=30)
    assert trio.current_time() == 1


async def test_iteration_ends_when_the_mailbox_closes(autojump_clock: trio.testing.MockClock) -> None:
    box: Mailbox[Msg] = Mailbox(4)
    seen: list[Msg] = []

    async def actor() -> None:
        async for msg in box:
            seen.append(msg)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(actor)
        await box.send(Note("a"))
        await trio.sleep(1)
        box.close()
    assert seen == [Note("a")]
    with pytest.raises(trio.EndOfChannel):
        await box.receive()
    box.close()  # idempotent
    assert trio.current_time() == 1


async def test_a_cancelled_requester_abandons_its_reply(autojump_clock: trio.testing.MockClock) -> None:
    box: Mailbox[Msg] = Mailbox(4)
    factory = ask("q")
    with trio.move_on_after(1):
        await box.request(factory, timeout=30)
    assert factory.reply is not None
    assert factory.reply.send("too late") is False
    assert box.statistics().pending_requests == 0
    assert trio.current_time() == 1


async def test_rendezvous_mailbox_serves_requests(autojump_clock: trio.testing.MockClock) -> None:
    box: Mailbox[Msg] = Mailbox(0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(answering_actor, box, 0.5)
        assert await box.request(ask("a"), timeout=5) == "A"
        assert await box.request(ask("b"), timeout=5) == "B"
        nursery.cancel_scope.cancel()
    assert trio.current_time() == 1.0


def test_reply_is_one_shot() -> None:
    reply: Reply[int] = Reply()
    assert not reply.done
    assert reply.send(1) is True
    assert reply.send(2) is False
    assert reply.fail(RuntimeError()) is False
    assert reply.done


@pytest.mark.parametrize("size", [-1, 1.5, math.nan])
def test_max_size_must_be_a_bound(size: float) -> None:
    with pytest.raises(ValueError):
        Mailbox(size)
