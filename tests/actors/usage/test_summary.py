"""The usage summary of a state directory against hand-computed figures: every field, each
``by``, ``since`` (durations and dates, at the boundary), and bad queries as typed errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.usage.report import summarise_state
from protocol.errors import BadRequest
from protocol.messages import UsageSummaryResult
from tests.actors.usage.logs import (
    EXPECTED_BY,
    EXPECTED_TOTALS,
    PRICES,
    at,
    figures,
    write_fixture,
)

NOW = at("2026-12-09T00:00:00")


def plain(result: UsageSummaryResult) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(result)
    return out


def approx(expected: dict[str, Any]) -> dict[str, Any]:
    """Token and turn counts exactly; dollars to a billionth (they are float sums)."""
    return {key: pytest.approx(value, abs=1e-9) if isinstance(value, float) else value
            for key, value in expected.items()}


@pytest.fixture
def state(tmp_path: Path) -> Path:
    write_fixture(tmp_path)
    return tmp_path


def test_totals_without_by_have_no_groups(state: Path) -> None:
    result = plain(summarise_state(state, PRICES, since=None, by=None, now=NOW))
    assert result["totals"] == approx(EXPECTED_TOTALS)
    assert result["groups"] == []


@pytest.mark.parametrize("by", ["harness", "model", "session", "day"])
def test_each_grouping(state: Path, by: str) -> None:
    result = plain(summarise_state(state, PRICES, since=None, by=by, now=NOW))
    assert result["totals"] == approx(EXPECTED_TOTALS)
    assert [group.pop("key") for group in result["groups"]] == list(EXPECTED_BY[by])  # sorted
    assert result["groups"] == [approx(f) for f in EXPECTED_BY[by].values()]


def test_since_a_date_starts_at_its_utc_midnight(state: Path) -> None:
    result = plain(summarise_state(state, PRICES, since="2026-12-02", by="day", now=NOW))
    days = EXPECTED_BY["day"]
    assert [g["key"] for g in result["groups"]] == ["2026-12-02", "2026-12-03"]
    both = {k: days["2026-12-02"][k] + days["2026-12-03"][k] for k in EXPECTED_TOTALS}
    assert result["totals"] == approx(both)


def test_since_a_duration_counts_back_from_now(state: Path) -> None:
    # 7 days before NOW is 2026-12-02T00:00:00.000Z: D's turn at that very millisecond counts,
    # its turn a millisecond before does not.
    result = plain(summarise_state(state, PRICES, since="7d", by="session", now=NOW))
    assert result["totals"]["turns"] == 5
    sessions = {g["key"]: g for g in result["groups"]}
    assert sessions["s-00000000000d"] == approx({**figures(1, 0, 1000, 0, 0, 200, 0.0024, 0.0024, 0),
                                                 "key": "s-00000000000d"})
    hours = plain(summarise_state(state, PRICES, since="168h", by=None, now=NOW))
    assert hours["totals"] == result["totals"]
    later = plain(summarise_state(state, PRICES, since="2026-12-03T04:30:00Z", by=None, now=NOW))
    assert later["totals"] == approx(figures(1, 0, 500, 50, 0, 0, 0.0, 0.0, 1))


@pytest.mark.parametrize(("since", "by", "field"), [
    ("yesterday", None, "since"), ("7w", None, "since"), ("", None, "since"),
    (None, "week", "by"), (None, "", "by"),
])
def test_a_bad_query_is_bad_request_naming_the_field(state: Path, since: str | None,
                                                     by: str | None, field: str) -> None:
    with pytest.raises(BadRequest) as caught:
        summarise_state(state, PRICES, since=since, by=by, now=NOW)
    assert caught.value.data is not None and caught.value.data["field"] == field


def test_an_empty_or_missing_state_directory_sums_to_zero(tmp_path: Path) -> None:
    result = plain(summarise_state(tmp_path / "none", PRICES, since=None, by="day", now=NOW))
    assert result == {"totals": figures(0, 0, 0, 0, 0, 0, 0.0, 0.0, 0), "groups": []}


def test_a_session_with_unreadable_meta_counts_under_unknown(state: Path) -> None:
    (state / "sessions" / "s-00000000000c" / "meta.json").write_text("{torn")
    result = plain(summarise_state(state, PRICES, since=None, by="harness", now=NOW))
    keys = [g["key"] for g in result["groups"]]
    assert "codex" not in keys and "unknown" in keys
    assert result["totals"] == approx(EXPECTED_TOTALS)


def test_user_prices_change_the_estimate_not_the_reported_costs(state: Path) -> None:
    from protocol.native import Price

    prices = {**PRICES, "mystery-1": Price(input=1.0, output=2.0)}
    result = plain(summarise_state(state, prices, since=None, by=None, now=NOW))
    # C's 500 in + 50 out at $1/$2 per million: $0.0006, estimated; nothing unpriced any more.
    assert result["totals"] == approx({**EXPECTED_TOTALS, "cost_usd": 0.0882,
                                       "estimated_cost_usd": 0.0072, "unpriced_turns": 0})
