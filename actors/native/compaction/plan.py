"""The compaction planner: which tool-response bodies to elide and which turns to drop. Pure.

Theory of operation. A request's contents are ``Entry``s (the content as JSON data, its raw
token estimate, and where it came from) in request order. A **turn** is a user prompt (a user
content with text and no function response; a summary counts) and the model/tool traffic after
it, up to the next prompt. Entries before the first prompt belong to the first turn.

Protected, never touched: entry 0 (the first prompt, the task), the **active** turn (the last
one: the request is being made for it), the ``keep_recent_turns`` turns before it, the system
instructions and declarations (not entries at all), and every call or response of a protected
tool. Eligible for compaction: the turns before those.

``compact`` works in two passes, each oldest first, and stops as soon as the calibrated total is
at most the target:

1. **elide**: a function response in an eligible turn gets the body ``{"output": "[elided]"}``,
   keeping its id, name and its pair (the call stays; so does the response);
2. **drop**: a whole eligible turn goes (the first turn keeps entry 0 and loses the rest),
   unless it holds a protected tool or a call whose response lies outside it (or the other way
   round): removing it would split a pair.

Every change is a ``Decision`` naming its target by fingerprint (a hash of canonical JSON), so
that it can be **replayed** after a restart on the request ADK rebuilds from the session store:
``replay`` applies a list of decisions in order, each to the first matching target, and skips
one whose target is gone. An identical response or turn seen twice gets two decisions, and each
takes the next occurrence. A ``Summary`` decision drops the turns it names and puts one user
content with its text where the first of them was. Summaries are not prompts: they join the
first turn, right after entry 0, and like it they are never dropped (a later summary sits
beside them), so a summary is never summarised again at every request.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from typing import Any

import msgspec

from .estimate import Calibration, canonical_json, content_tokens
from .settings import CompactionConfig

__all__ = [
    "ELIDED", "ELIDED_BODY", "SUMMARY_PREFIX", "Decision", "Drop", "Elide", "Entry", "Outcome",
    "Summary", "compact", "entries", "replay", "summary_entry", "turns",
]

ELIDED = "[elided]"
ELIDED_BODY: dict[str, Any] = {"output": ELIDED}
SUMMARY_PREFIX = "[Summary of earlier turns of this conversation, which were compacted]\n"


class Elide(msgspec.Struct, tag="elide", kw_only=True, frozen=True):
    """Elide the body of the function response with fingerprint ``key``."""

    key: str


class Drop(msgspec.Struct, tag="drop", kw_only=True, frozen=True):
    """Drop the turn (its droppable unit) with fingerprint ``key``."""

    key: str


class Summary(msgspec.Struct, tag="summary", kw_only=True, frozen=True):
    """Drop the turns ``keys`` and put ``text`` (a user content) where the first one was."""

    keys: list[str]
    text: str


Decision = Elide | Drop | Summary


class Entry:
    """One content of a request: its JSON ``data``, raw ``tokens``, and ``origin`` (its index
    in the original request; ``None`` for a summary made here)."""

    __slots__ = ("_keys", "data", "origin", "prompt", "tokens")

    def __init__(self, data: dict[str, Any], origin: int | None) -> None:
        self.data = data
        self.origin = origin
        self.tokens = content_tokens(data)
        self.prompt = _is_prompt(data)
        self._keys: dict[int, str] | None = None

    def response_keys(self) -> dict[int, str]:
        """Part index → fingerprint of each function response not elided (computed once)."""
        if self._keys is None:
            self._keys = {i: _key(r) for i, r in _responses(self.data)
                          if r.get("response") != ELIDED_BODY}
        return self._keys


class Outcome(msgspec.Struct, kw_only=True):
    """What ``compact`` did: the new decisions (to persist), the estimates, and a summary."""

    entries: list[Entry]
    decisions: list[Decision] = []
    tokens_before: int = 0
    tokens_after: int = 0
    elided: list[str] = []
    """Ids (else names) of the function responses elided."""
    dropped: list[list[dict[str, Any]]] = []
    """The contents of each dropped turn, oldest first (what a summary would cover)."""
    exhausted: bool = False
    """Still above the target with nothing eligible left."""


def entries(contents: Sequence[dict[str, Any]]) -> list[Entry]:
    """``contents`` (JSON data, request order) as entries."""
    return [Entry(data, index) for index, data in enumerate(contents)]


def turns(items: Sequence[Entry]) -> list[range]:
    """The turns of ``items`` as index ranges (see the module docstring)."""
    starts = [i for i, entry in enumerate(items) if entry.prompt]
    if not items:
        return []
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    ends = [*starts[1:], len(items)]
    return [range(s, e) for s, e in zip(starts, ends, strict=True)]


def replay(items: list[Entry], decisions: Sequence[Decision]) -> list[Entry]:
    """``items`` with ``decisions`` applied in order (a decision whose target is gone is
    skipped). Entries that change are copies; ``items`` is not modified."""
    out = list(items)
    for decision in decisions:
        match decision:
            case Elide(key=key):
                found = _find_response(out, key)
                if found is not None:
                    out[found[0]] = _elided(out[found[0]], found[1])
            case Drop(key=key):
                unit = _find_unit(out, key)
                if unit is not None:
                    del out[unit.start:unit.stop]
            case Summary(keys=keys, text=text):
                out = _summarise(out, keys, text)
    return out


def compact(items: list[Entry], *, fixed: int, config: CompactionConfig,
            calibration: Calibration) -> Outcome:
    """Elide, then drop, oldest first, until the calibrated total is at most the target (see
    the module docstring). ``fixed`` is the raw estimate of what is never compacted (system
    instructions, declarations). Does not look at the trigger: the caller decided."""
    target = config.target * config.context_tokens
    out = list(items)
    total = fixed + sum(e.tokens for e in out)
    outcome = Outcome(entries=out, tokens_before=calibration.scale(total))
    protected = frozenset(config.protected_tools)

    def done() -> bool:
        return calibration.scale(total) <= target

    for turn in _eligible(out, config.keep_recent_turns):
        for index in turn:
            for part_index, response in _responses(out[index].data):
                if done():
                    break
                if response.get("name") in protected or response.get("response") == ELIDED_BODY:
                    continue
                changed = _elided(out[index], part_index)
                if changed.tokens >= out[index].tokens:
                    continue
                total += changed.tokens - out[index].tokens
                out[index] = changed
                outcome.decisions.append(Elide(key=_key(response)))
                outcome.elided.append(str(response.get("id") or response.get("name") or ""))
    while not done():
        unit = next((u for u in _units(out, config.keep_recent_turns)
                     if _droppable(out, u, protected)), None)
        if unit is None:
            outcome.exhausted = True
            break
        outcome.decisions.append(Drop(key=_unit_key(out, unit)))
        outcome.dropped.append([out[i].data for i in unit])
        total -= sum(out[i].tokens for i in unit)
        del out[unit.start:unit.stop]
    outcome.entries = out
    outcome.tokens_after = calibration.scale(total)
    return outcome


def summary_entry(text: str) -> Entry:
    """The user content that stands for summarised turns."""
    return Entry({"parts": [{"text": SUMMARY_PREFIX + text}], "role": "user"}, None)


# --- internals ----------------------------------------------------------------------------


def _is_prompt(data: dict[str, Any]) -> bool:
    parts = data.get("parts") or []
    return (data.get("role") == "user" and any(p.get("text") for p in parts)
            and not any(p.get("function_response") is not None for p in parts)
            and not _is_summary(data))


def _is_summary(data: dict[str, Any]) -> bool:
    parts = data.get("parts") or []
    return (data.get("role") == "user" and len(parts) == 1
            and str(parts[0].get("text") or "").startswith(SUMMARY_PREFIX))


def _unit(items: Sequence[Entry], turn: range) -> range:
    """What of ``turn`` may be dropped: not entry 0, not the summaries that follow it."""
    start = max(turn.start, 1)
    while start < turn.stop and _is_summary(items[start].data):
        start += 1
    return range(start, turn.stop)


def _eligible(items: Sequence[Entry], keep: int) -> list[range]:
    all_turns = turns(items)
    return all_turns[:max(0, len(all_turns) - 1 - keep)]


def _units(items: Sequence[Entry], keep: int) -> list[range]:
    """The droppable unit of each eligible turn (the first keeps entry 0), empty ones left out."""
    units = [_unit(items, t) for t in _eligible(items, keep)]
    return [u for u in units if len(u)]


def _responses(data: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [(i, p["function_response"]) for i, p in enumerate(data.get("parts") or [])
            if p.get("function_response") is not None]


def _calls(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["function_call"] for p in data.get("parts") or []
            if p.get("function_call") is not None]


def _droppable(items: Sequence[Entry], unit: range, protected: frozenset[str]) -> bool:
    calls: set[str] = set()
    answered: set[str] = set()
    for index in unit:
        data = items[index].data
        for call in _calls(data):
            if call.get("name") in protected:
                return False
            calls.add(str(call.get("id")))
        for _, response in _responses(data):
            if response.get("name") in protected:
                return False
            answered.add(str(response.get("id")))
    return calls == answered


def _key(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()[:24]


def _unit_key(items: Sequence[Entry], unit: range) -> str:
    return _key([items[i].data for i in unit])


def _elided(entry: Entry, part_index: int) -> Entry:
    data = copy.deepcopy(entry.data)
    data["parts"][part_index]["function_response"]["response"] = dict(ELIDED_BODY)
    return Entry(data, entry.origin)


def _find_response(items: Sequence[Entry], key: str) -> tuple[int, int] | None:
    all_turns = turns(items)
    before_active = all_turns[-1].start if all_turns else 0
    for index, entry in enumerate(items[:before_active]):  # never the active turn
        for part_index, found in entry.response_keys().items():
            if found == key:
                return index, part_index
    return None


def _find_unit(items: Sequence[Entry], key: str) -> range | None:
    all_turns = turns(items)
    for turn in all_turns[:-1]:  # never the active turn
        unit = _unit(items, turn)
        if len(unit) and _unit_key(items, unit) == key:
            return unit
    return None


def _summarise(items: list[Entry], keys: Sequence[str], text: str) -> list[Entry]:
    out = list(items)
    at: int | None = None
    for key in keys:
        unit = _find_unit(out, key)
        if unit is None:
            continue
        at = unit.start if at is None else min(at, unit.start)
        del out[unit.start:unit.stop]
    if at is not None:
        out.insert(at, summary_entry(text))
    return out
