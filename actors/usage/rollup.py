"""A session's turns summed per (UTC day, model): what a summary adds up instead of its turns.

A bucket holds, in order: turns, errors, the four token counts, the cost the harness reported,
and, of the turns without one but with tokens (those the price table is to price), their count
and their four token counts. A price is linear in tokens, so pricing those sums once gives what
pricing each turn would (``summary``); and a day holds no turn of another day, so a summary
from a moment on adds the whole buckets of the days after it and only that day's turns one by
one. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from actors.usage.logscan import TurnFacts

__all__ = ["Bucket", "Rollup", "add_turn", "merge", "new_bucket", "roll_up"]

Bucket = list[int | float]
"""turns, errors, input, output, cache read, cache write, reported cost, to price, and the
four token counts of those to price."""


class Rollup(msgspec.Struct, array_like=True, frozen=True):
    """The bucket of one (UTC day ``YYYY-MM-DD``, model of the turns or None) of one session."""

    day: str
    model: str | None
    bucket: Bucket


def new_bucket() -> Bucket:
    return [0, 0, 0, 0, 0, 0, 0.0, 0, 0, 0, 0, 0]


def add_turn(bucket: Bucket, turn: TurnFacts) -> None:
    """Count ``turn`` in ``bucket``."""
    i, o, cr, cw = turn.input_tokens, turn.output_tokens, turn.cache_read_tokens, turn.cache_write_tokens
    bucket[0] += 1
    bucket[1] += turn.is_error
    bucket[2] += i
    bucket[3] += o
    bucket[4] += cr
    bucket[5] += cw
    if turn.cost_usd is not None:
        bucket[6] += turn.cost_usd
    elif i or o or cr or cw:  # a turn without tokens and without a cost costs nothing
        bucket[7] += 1
        bucket[8] += i
        bucket[9] += o
        bucket[10] += cr
        bucket[11] += cw


def merge(into: Bucket, bucket: Bucket) -> None:
    """Add ``bucket`` to ``into``."""
    for n, value in enumerate(bucket):
        into[n] += value


def roll_up(rollups: Iterable[Rollup], turns: Iterable[TurnFacts]) -> list[Rollup]:
    """``rollups`` with ``turns`` added, sorted by (day, model)."""
    found: dict[tuple[str, str | None], Bucket] = {}
    for rollup in rollups:
        found[rollup.day, rollup.model] = list(rollup.bucket)
    for turn in turns:
        key = (turn.ts[:10], turn.model)
        bucket = found.get(key)
        if bucket is None:
            bucket = found[key] = new_bucket()
        add_turn(bucket, turn)
    return [Rollup(day=day, model=model, bucket=bucket)
            for (day, model), bucket in sorted(found.items(), key=lambda item: (item[0][0], item[0][1] or ""))]
