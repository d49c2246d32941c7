"""The facts of each turn in a span of a session's ``events.jsonl`` (pure: bytes in, facts out).

A turn is a ``result`` event; its model is the one the newest ``init`` before it named (None
before any). Only the lines that can hold one of those two events are decoded: the log's
encoder writes a frame's ``event`` last with its ``type`` first, and a ``"`` inside a JSON string
is escaped, so ``"event":{"type":"result"`` occurs raw only in a result's own line or in an
object some event carries (a tool's input), and the decoded ``type`` tells those apart. A span
ends at its last newline: a line still being written, or torn by a crash, is not read (a later
scan reads it once it is whole, or never, once the log is cut back to its good prefix).
"""

from __future__ import annotations

import re

import msgspec

from protocol.events import Usage

__all__ = ["TurnFacts", "scan_span"]


class TurnFacts(msgspec.Struct, array_like=True, frozen=True):
    """One turn as its ``result`` event recorded it, with the model of the ``init`` before it."""

    ts: str
    """The frame's wire time (UTC ISO-8601 with a ``Z``): its order is the time order."""
    model: str | None
    is_error: bool
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float | None
    """The cost the harness reported (native sessions: from the price table), or None."""


def scan_span(data: bytes, model: str | None) -> tuple[list[TurnFacts], str | None, int]:
    """The turns in ``data`` (whole lines of a log, from a line's start), the model in force at
    its end (``model`` at its start), and how many bytes of whole lines were read."""
    end = data.rfind(b"\n") + 1
    turns: list[TurnFacts] = []
    done = 0  # the end of the last line decoded: a line holding the marker twice is read once
    for match in _MARKER.finditer(data, 0, end):
        start = match.start()
        if start < done:
            continue
        first = data.rfind(b"\n", 0, start) + 1
        done = data.find(b"\n", start)
        try:
            frame = _DECODER.decode(data[first:done])
        except msgspec.DecodeError:
            continue  # not a frame of ours: nothing a client was shown as a turn
        event = frame.event
        if event.type == "init":
            model = event.model or model
        elif event.type == "result":
            usage = event.usage
            turns.append(TurnFacts(ts=frame.ts, model=model, is_error=event.is_error,
                                   input_tokens=usage.input_tokens,
                                   output_tokens=usage.output_tokens,
                                   cache_read_tokens=usage.cache_read_tokens,
                                   cache_write_tokens=usage.cache_write_tokens,
                                   cost_usd=event.cost_usd))
    return turns, model, end


class _Event(msgspec.Struct, frozen=True):
    """The fields of an ``init`` or ``result`` event that usage needs (others are skipped)."""

    type: str
    model: str | None = None
    is_error: bool = False
    usage: Usage = Usage()
    cost_usd: float | None = None


class _Frame(msgspec.Struct, frozen=True):
    ts: str
    event: _Event


_MARKER = re.compile(rb'"event":\{"type":"(?:result|init)"')
_DECODER = msgspec.json.Decoder(_Frame)
