"""Summing turns into ``usage.summary``'s figures: the query (``since``, ``by``), pricing, groups.

Pure: the turns and the prices come in, the clock as ``now``. How a turn is costed:

* the harness reported a cost (Claude Code's ``total_cost_usd`` per turn, pi, OpenCode, and the
  native harness, which prices its own model calls from the same table): that figure;
* else a turn without tokens costs nothing (there is nothing to bill);
* else the price table's entry for the turn's model (``pricing.price_for``), counted in both
  ``cost_usd`` and ``estimated_cost_usd``;
* else (no model known, or no price for it) the turn counts in ``unpriced_turns`` and adds no
  cost: zero would look like a real figure.

A turn's model is the one the session's newest ``init`` before it named, else the session's
model as its metadata has it now (``session.set_model`` is not in the log, so a turn after a
model switch counts under the model of the last ``init``).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Mapping
from typing import Literal, get_args

import msgspec

from actors.usage.index import IndexedUsage
from actors.usage.rollup import Bucket, add_turn, merge, new_bucket
from actors.usage.pricing import call_cost, model_name, price_for
from protocol.errors import BadRequest
from protocol.events import Usage
from protocol.messages import UsageFigures, UsageGroup, UsageSummaryResult
from protocol.price import Price

__all__ = ["GROUPINGS", "By", "SessionUsage", "parse_by", "parse_since", "summarise"]

By = Literal["harness", "model", "session", "day"]
GROUPINGS: tuple[By, ...] = get_args(By)
"""What ``by`` may name (``protocol``'s ``USAGE_GROUPINGS``, typed)."""

UNKNOWN = "unknown"
"""The group key of a turn whose model (or a session whose harness) is not known."""


class SessionUsage:
    """One session's usage with what groups it: its id, harness and current model."""

    __slots__ = ("harness", "model", "session_id", "usage")

    def __init__(self, session_id: str, harness: str, model: str | None, usage: IndexedUsage) -> None:
        self.session_id = session_id
        self.harness = harness
        self.model = model
        self.usage = usage


def parse_since(text: str | None, now: float) -> str | None:
    """The wire time from which turns count: ``7d``, ``12h``, ``30m`` before ``now`` (epoch
    seconds), or a UTC date (``2026-12-01``, from its midnight) or ISO time (a ``Z`` or offset,
    else UTC). ``BadRequest`` (``data.field`` = ``since``) for anything else."""
    if text is None:
        return None
    relative = _RELATIVE.fullmatch(text.strip())
    if relative:
        seconds = int(relative[1]) * _UNITS[relative[2]]
        moment = _dt.datetime.fromtimestamp(now - seconds, tz=_dt.UTC)
    else:
        try:
            moment = _dt.datetime.fromisoformat(text.strip())
        except ValueError:
            raise BadRequest(f"since {text!r} is neither a duration (7d, 12h, 30m) nor a date "
                             "(2026-12-01)", data={"field": "since", "value": text}) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=_dt.UTC)
    utc = moment.astimezone(_dt.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_by(text: str | None) -> By | None:
    """``by`` checked: one of ``GROUPINGS`` or None; ``BadRequest`` (``data.field`` = ``by``)."""
    if text is None:
        return None
    for by in GROUPINGS:
        if text == by:
            return by
    raise BadRequest(f"by {text!r} is not one of {', '.join(GROUPINGS)}",
                     data={"field": "by", "value": text})


def summarise(sessions: Iterable[SessionUsage], prices: Mapping[str, Price], *,
              since: str | None = None, by: By | None = None) -> UsageSummaryResult:
    """The totals of every turn at or after ``since`` (a wire time), and one group per ``by``
    key, sorted by key (so days run oldest first).

    Each session's buckets per (day, model) (``rollup``) are added up per (group, model): the
    days after ``since``'s whole, its own day turn by turn. Then each sum of turns to be priced
    is priced once (a price is linear in tokens).
    """
    buckets: dict[tuple[str, str | None], Bucket] = {}
    day = by == "day"
    since_day = None if since is None else since[:10]

    def bucket_for(key: str | None, model: str | None, when: str) -> Bucket:
        group = key if key is not None else when if day else model or UNKNOWN
        bucket = buckets.get((group, model))
        if bucket is None:
            bucket = buckets[group, model] = new_bucket()
        return bucket

    for session in sessions:
        fixed = None if by in ("model", "day") else {
            "harness": session.harness, "session": session.session_id}.get(by or "", "")
        edge = False
        for rollup in session.usage.rollups:
            if since_day is not None and rollup.day <= since_day:
                edge = edge or rollup.day == since_day
                continue
            model = rollup.model or session.model
            merge(bucket_for(fixed, model, rollup.day), rollup.bucket)
        if edge:
            for turn in session.usage.turns():
                if turn.ts[:10] == since_day and turn.ts >= (since or ""):
                    model = turn.model or session.model
                    add_turn(bucket_for(fixed, model, since_day), turn)
    totals = _Sums()
    groups: dict[str, _Sums] = {}
    found: dict[str | None, Price | None] = {}
    for (key, model), bucket in buckets.items():
        if model not in found:
            found[model] = None if model is None else price_for(model_name(model), prices)
        price = found[model]
        estimated = 0.0
        if price is not None and bucket[7]:
            estimated = call_cost(Usage(input_tokens=int(bucket[8]), output_tokens=int(bucket[9]),
                                        cache_read_tokens=int(bucket[10]),
                                        cache_write_tokens=int(bucket[11])), price)
        unpriced = int(bucket[7]) if price is None else 0
        totals.add(bucket, estimated, unpriced)
        if by is not None:
            groups.setdefault(key, _Sums()).add(bucket, estimated, unpriced)
    return UsageSummaryResult(totals=totals.figures(),
                              groups=[groups[key].group(key) for key in sorted(groups)])


class _Sums:
    """Running sums of one group (mutable; ``figures``/``group`` freeze them)."""

    __slots__ = ("cache_read", "cache_write", "cost", "errors", "estimated", "input", "output",
                 "turns", "unpriced")

    def __init__(self) -> None:
        self.turns = self.errors = self.input = self.output = 0
        self.cache_read = self.cache_write = self.unpriced = 0
        self.cost = self.estimated = 0.0

    def add(self, bucket: Bucket, estimated: float, unpriced: int) -> None:
        """Add a bucket of ``summarise`` with its estimated cost and unpriced turns."""
        self.turns += int(bucket[0])
        self.errors += int(bucket[1])
        self.input += int(bucket[2])
        self.output += int(bucket[3])
        self.cache_read += int(bucket[4])
        self.cache_write += int(bucket[5])
        self.cost += bucket[6] + estimated
        self.estimated += estimated
        self.unpriced += unpriced

    def figures(self) -> UsageFigures:
        return UsageFigures(turns=self.turns, errors=self.errors, input_tokens=self.input,
                            output_tokens=self.output, cache_read_tokens=self.cache_read,
                            cache_write_tokens=self.cache_write, cost_usd=round(self.cost, 8),
                            estimated_cost_usd=round(self.estimated, 8),
                            unpriced_turns=self.unpriced)

    def group(self, key: str) -> UsageGroup:
        return UsageGroup(key=key, **msgspec.structs.asdict(self.figures()))


_RELATIVE = re.compile(r"(\d+)([dhm])")
_UNITS = {"d": 86400, "h": 3600, "m": 60}
