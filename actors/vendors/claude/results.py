"""Claude ``result`` frames → corral ``Result`` (and ``Error``) events; merging a split turn.

Facts the shapes follow (Claude Code 2.1.197): ``usage`` is per turn, ``total_cost_usd`` is
cumulative over the process (an error result repeats the running total; a process started with
``--resume`` starts again from 0); API failures arrive as ``subtype: "success"`` with
``is_error: true``, the HTTP status in ``api_error_status`` and the prose in ``result``; an
interrupt ends the turn with ``subtype: "error_during_execution"`` and ``terminal_reason``
``aborted_streaming`` or ``aborted_tools``.
"""

from __future__ import annotations

from typing import TypeVar

from actors.vendors.claude.errors import classify
from actors.vendors.claude.frames import ApiUsage, ResultFrame
from protocol.events import Error, Result, Usage

__all__ = ["CostMeter", "build_result", "merge"]

_N = TypeVar("_N", int, float)


class CostMeter:
    """Turns the CLI's cumulative cost into the cost of each turn."""

    def __init__(self) -> None:
        self.total = 0.0

    def turn_cost(self, total: float | None) -> float | None:
        """The cost of the turn whose result reported ``total`` (a drop means the total was reset)."""
        if total is None:
            return None
        cost = total - self.total if total >= self.total else total
        self.total = total
        return cost


def build_result(
    frame: ResultFrame, *, interrupting: bool, cost: float | None, error_tag: str | None
) -> tuple[Result, Error | None]:
    """The ``Result`` of one result frame, and a classified ``Error`` when it reports a failure.

    ``interrupting`` says we asked for an interrupt in this turn: the aborted turn it causes is
    ``stop_reason="interrupted"`` and not an error. ``error_tag`` is the ``error`` of the
    synthetic assistant message the CLI sent in this turn, if any.
    """
    usage = frame.usage or ApiUsage()
    interrupted = interrupting and (
        frame.subtype == "error_during_execution" or (frame.terminal_reason or "").startswith("aborted"))
    is_error = frame.is_error and not interrupted
    stop = frame.stop_reason or "end_turn"
    if interrupted:
        stop = "interrupted"
    elif frame.subtype in ("error_max_turns", "error_max_budget_usd"):
        stop = frame.subtype.removeprefix("error_")
    elif is_error:
        stop = "error"
    result = Result(
        stop_reason=stop, is_error=is_error, cost_usd=cost, duration_ms=frame.duration_ms,
        usage=Usage(input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0,
                    cache_read_tokens=usage.cache_read_input_tokens or 0,
                    cache_write_tokens=usage.cache_creation_input_tokens or 0),
    )
    if not is_error:
        return result, None
    message = "; ".join(m for m in [frame.result or "", *frame.errors] if m) or frame.subtype
    verdict = classify(message, status=frame.api_error_status, tag=error_tag, subtype=frame.subtype)
    return result, verdict.event()


def merge(first: Result, then: Result) -> Result:
    """One result for a turn the CLI split in two (a steer ran as a follow-up turn)."""
    a, b = first.usage, then.usage
    usage = Usage(input_tokens=a.input_tokens + b.input_tokens, output_tokens=a.output_tokens + b.output_tokens,
                  cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
                  cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens)
    return Result(stop_reason=then.stop_reason, is_error=then.is_error, usage=usage,
                  cost_usd=_add(first.cost_usd, then.cost_usd),
                  duration_ms=_add(first.duration_ms, then.duration_ms))


def _add(a: _N | None, b: _N | None) -> _N | None:
    if a is None:
        return b
    return a if b is None else a + b
