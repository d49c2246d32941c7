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

from actors.usage.logscan import TurnFacts
from actors.usage.pricing import call_cost, model_name, price_for
from protocol.errors import BadRequest
from protocol.events import Usage
from protocol.messages import UsageFigures, UsageGroup, UsageSummaryResult
from protocol.native import Price

__all__ = ["GROUPINGS", "By", "SessionTurns", "parse_by", "parse_since", "summarise"]

By = Literal["harness", "model", "session", "day"]
GROUPINGS: tuple[By, ...] = get_args(By)
"""What ``by`` may name (``protocol``'s ``USAGE_GROUPINGS``, typed)."""

UNKNOWN = "unknown"
"""The group key of a turn whose model (or a session whose harness) is not known."""


class SessionTurns:
    """One session's turns with what groups them: its id, harness and current model."""

    __slots__ = ("harness", "model", "session_id", "turns")

    def __init__(self, session_id: str, harness: str, model: str | None, turns: list[TurnFacts]) -> None:
        self.session_id = session_id
        self.harness = harness
        self.model = model
        self.turns = turns


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


def summarise(sessions: Iterable[SessionTurns], prices: Mapping[str, Price], *,
              since: str | None = None, by: By | None = None) -> UsageSummaryResult:
    """The totals of every turn at or after ``since`` (a wire time), and one group per ``by``
    key, sorted by key (so days run oldest first)."""
    totals = _Sums()
    groups: dict[str, _Sums] = {}
    costs = _Costs(prices)
    for session in sessions:
        fixed = {"harness": session.harness, "session": session.session_id}.get(by or "")
        for turn in session.turns:
            if since is not None and turn.ts < since:
                continue
            model = turn.model or session.model
            cost, estimated = costs.of(turn, model)
            totals.add(turn, cost, estimated)
            if by is None:
                continue
            if fixed is not None:
                key = fixed
            elif by == "day":
                key = turn.ts[:10]
            else:
                key = model or UNKNOWN
            sums = groups.get(key)
            if sums is None:
                sums = groups[key] = _Sums()
            sums.add(turn, cost, estimated)
    return UsageSummaryResult(totals=totals.figures(),
                              groups=[groups[key].group(key) for key in sorted(groups)])


class _Costs:
    """A turn's cost and whether it is estimated, with the price of each model looked up once."""

    def __init__(self, prices: Mapping[str, Price]) -> None:
        self._prices = prices
        self._found: dict[str, Price | None] = {}

    def of(self, turn: TurnFacts, model: str | None) -> tuple[float | None, bool]:
        """``(cost, estimated)``; a cost of None is an unpriced turn."""
        if turn.cost_usd is not None:
            return turn.cost_usd, False
        if not (turn.input_tokens or turn.output_tokens or turn.cache_read_tokens
                or turn.cache_write_tokens):
            return 0.0, False
        if model is None:
            return None, False
        if model not in self._found:
            self._found[model] = price_for(model_name(model), self._prices)
        price = self._found[model]
        if price is None:
            return None, False
        usage = Usage(input_tokens=turn.input_tokens, output_tokens=turn.output_tokens,
                      cache_read_tokens=turn.cache_read_tokens,
                      cache_write_tokens=turn.cache_write_tokens)
        return call_cost(usage, price), True


class _Sums:
    """Running sums of one group (mutable; ``figures``/``group`` freeze them)."""

    __slots__ = ("cache_read", "cache_write", "cost", "errors", "estimated", "input", "output",
                 "turns", "unpriced")

    def __init__(self) -> None:
        self.turns = self.errors = self.input = self.output = 0
        self.cache_read = self.cache_write = self.unpriced = 0
        self.cost = self.estimated = 0.0

    def add(self, turn: TurnFacts, cost: float | None, estimated: bool) -> None:
        self.turns += 1
        self.errors += turn.is_error
        self.input += turn.input_tokens
        self.output += turn.output_tokens
        self.cache_read += turn.cache_read_tokens
        self.cache_write += turn.cache_write_tokens
        if cost is None:
            self.unpriced += 1
        else:
            self.cost += cost
            if estimated:
                self.estimated += cost

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
