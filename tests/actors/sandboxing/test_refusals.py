"""``Refusals``: a loop of refused connections costs the log one event per ``host:port`` per
window, and the counts add up (the clock is trio's ``MockClock``: windows pass at once)."""

from __future__ import annotations

import trio
import trio.testing

from actors.sandboxing.refusals import Refusals
from protocol.events import Event, SandboxEvent


def _denied(host: str, port: int, count: int) -> SandboxEvent:
    return SandboxEvent(kind="network", host=host, port=port, decision="denied", count=count)


def test_a_retry_loop_is_one_event_then_a_count_per_window() -> None:
    heard: list[tuple[float, Event]] = []

    async def main() -> None:
        start = trio.current_time()

        async def announce(event: Event) -> None:
            heard.append((trio.current_time() - start, event))

        refusals = Refusals(announce, window=30.0)
        async with trio.open_nursery() as nursery:
            await nursery.start(refusals.run)
            for second in range(0, 71, 7):  # a retry every 7 s, 0 .. 70 (11 in all)
                await trio.sleep_until(start + second)
                await refusals.refused("evil.example", 443)
                if second == 14:
                    await refusals.refused("other.example", 80)
            await trio.sleep_until(start + 200)  # quiet: both are forgotten
            await refusals.refused("evil.example", 443)
            await trio.sleep_until(start + 300)
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert heard == [
        (0.0, _denied("evil.example", 443, 1)),
        (14.0, _denied("other.example", 80, 1)),
        (30.0, _denied("evil.example", 443, 4)),  # the retries at 7, 14, 21, 28
        (60.0, _denied("evil.example", 443, 4)),  # 35 .. 56
        (90.0, _denied("evil.example", 443, 2)),  # 63, 70; nothing by 120: forgotten
        (200.0, _denied("evil.example", 443, 1)),  # at once again
    ]
    assert sum(e.count for _, e in heard[:5] if isinstance(e, SandboxEvent) and e.host == "evil.example") == 11


def test_without_its_timers_running_each_refusal_is_its_own_event() -> None:
    heard: list[Event] = []

    async def main() -> None:
        async def announce(event: Event) -> None:
            heard.append(event)

        refusals = Refusals(announce)
        await refusals.refused("evil.example", 443)
        await refusals.refused("evil.example", 443)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert heard == [_denied("evil.example", 443, 1)] * 2
