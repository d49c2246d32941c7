"""The pure pieces of the native worker: which tools ask, and a turn's usage and cost."""

from __future__ import annotations

from actors.native.worker.accounting import TurnAccount, call_cost, price_for
from actors.native.worker.askrules import AskRules
from protocol.events import Usage
from protocol.models import Permissions
from protocol.native import Price


def test_the_gate_asks_by_mode_and_allow_patterns_and_remembers_allow_always() -> None:
    ask = AskRules(Permissions(mode="ask", allow_tools=["wr*"]))
    assert [t for t in ("read", "write", "edit", "bash", "grep", "find", "ls") if ask.asks(t)] == [
        "edit", "bash"]
    ask.allow_always("bash")
    assert not ask.asks("bash") and ask.asks("edit")
    assert [t for t in ("write", "edit", "bash") if AskRules(Permissions(mode="auto_edit")).asks(t)] == [
        "bash"]
    assert not any(AskRules(Permissions(mode="auto")).asks(t) for t in ("write", "edit", "bash"))
    assert AskRules(Permissions(mode="inherit")).asks("write")


def test_prices_match_exactly_then_by_the_longest_dated_prefix() -> None:
    prices = {"gpt-4.1": Price(input=2, output=8), "gpt-4.1-mini": Price(input=0.4, output=1.6)}
    assert price_for("gpt-4.1-mini", prices) == prices["gpt-4.1-mini"]
    assert price_for("gpt-4.1-mini-2025-04-14", prices) == prices["gpt-4.1-mini"]
    assert price_for("gpt-4.1-2025-04-14", prices) == prices["gpt-4.1"]
    assert price_for("gpt-4.10", prices) is None and price_for("other", prices) is None


def test_cached_tokens_use_their_own_rates_or_the_input_rate() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000,
                  cache_write_tokens=1_000_000)
    assert call_cost(usage, Price(input=1, output=2, cache_read=0.1, cache_write=1.25)) == 4.35
    assert call_cost(usage, Price(input=1, output=2)) == 5.0


def test_a_turn_sums_its_calls_and_an_unpriced_call_makes_the_cost_unknown() -> None:
    account = TurnAccount({"m": Price(input=1, output=1)})
    assert account.cost_usd is None  # no call yet
    account.add("m", Usage(input_tokens=500_000))
    account.add("m", Usage(input_tokens=250_000, output_tokens=250_000, cache_read_tokens=4))
    assert account.usage == Usage(input_tokens=750_000, output_tokens=250_000, cache_read_tokens=4)
    assert account.cost_usd == 1.000004
    account.add("unknown", Usage(input_tokens=1))
    assert account.cost_usd is None and account.calls == 3


def test_mcp_tools_ask_in_ask_inherit_and_auto_edit_unless_an_allow_pattern_matches() -> None:
    modes = {mode: AskRules(Permissions(mode=mode)).asks("mcp__fs__read")  # type: ignore[arg-type]
             for mode in ("ask", "inherit", "auto_edit", "auto")}
    assert modes == {"ask": True, "inherit": True, "auto_edit": True, "auto": False}
    allowed = AskRules(Permissions(mode="auto_edit", allow_tools=["mcp__fs__*"]))
    assert not allowed.asks("mcp__fs__write") and allowed.asks("mcp__git__commit")
    assert not allowed.asks("diagnostics") and not allowed.asks("read")
    allowed.allow_always("mcp__git__commit")
    assert not allowed.asks("mcp__git__commit")
