"""A feed's publish stamps: what ``corral.event.delivery`` measures each live event from."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors.session import feed as feed_module
from actors.session.feed import Feed


class _Log:
    def __init__(self, last_seq: int) -> None:
        self.last_seq = last_seq

    def read_from(self, from_seq: int, until: int | None = None) -> Iterator[bytes]:
        return iter(())


def test_each_event_has_the_time_of_the_publish_that_showed_it(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([10.0, 20.0])
    monkeypatch.setattr(feed_module.time, "perf_counter", lambda: next(clock))
    log = _Log(4)  # events 1-4 were there before the feed: no stamp
    feed = Feed(log)
    log.last_seq = 6
    feed.appended()  # 5, 6 at 10.0
    feed.appended()  # nothing new: no stamp
    log.last_seq = 7
    feed.appended()  # 7 at 20.0
    assert [feed.published_at(seq) for seq in range(1, 9)] == [
        None, None, None, None, 10.0, 10.0, 20.0, None]


def test_old_publishes_are_forgotten_in_bulk() -> None:
    log = _Log(0)
    feed = Feed(log)
    for seq in range(1, 2 * feed_module._STAMPS + 2):
        log.last_seq = seq
        feed.appended()
    assert feed.published_at(feed_module._STAMPS) is None
    assert feed.published_at(feed_module._STAMPS + 1) is not None
    assert feed.published_at(2 * feed_module._STAMPS + 1) is not None
