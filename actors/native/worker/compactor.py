"""Compaction in the worker: the ADK side of ``actors.native.compaction``.

``Compactor.before_model`` runs on every model request (from the agent's before-model callback,
after steering prompts are injected): it replays the session's sticky decisions (the sidecar)
on the request ADK built from the store, estimates it, and when compaction is on and the
calibrated estimate reaches ``trigger`` × ``context_tokens`` it plans new decisions, persists
them and emits a ``compaction`` event. In ``summarize`` mode the dropped turns are first sent to
the model for a summary (``summary_retries`` retries); a summary that cannot be had leaves the
turns simply dropped (the event's ``warning`` says so). ``after_model`` folds the prompt tokens
the provider reported into the calibration.

``compact_history`` is ``session.compact``: the same on an idle session's history, with no
trigger and a target of zero (everything eligible goes; the recent window stays), so that the
next model request carries the result.

The session store is never rewritten: the request is, from the decisions.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from actors.native.compaction import (
    Calibration, CompactionConfig, Decision, Drop, Entry, Outcome, Sidecar, Summary, compact,
    declaration_tokens, entries, replay, system_tokens,
)
from actors.native.compaction.plan import ELIDED_BODY
from protocol.events import Compaction, Error, Event

__all__ = ["SUMMARY_SYSTEM", "Compactor", "Summarizer", "model_summarizer", "transcript"]

log = logging.getLogger("corral.native.compaction")

Summarizer = Callable[[list[list[dict[str, Any]]]], Awaitable[str]]
"""Dropped turns (content JSON, oldest first) → a summary; raises on failure."""

_CONFIRMATION = "adk_request_confirmation"


class Compactor:
    """One session's compaction state (see the module docstring)."""

    def __init__(self, config: CompactionConfig, *, store_dir: str, session_id: str,
                 emit: Callable[[Event], None], summarize: Summarizer) -> None:
        self.config = config
        self._emit = emit
        self._summarize = summarize
        self.sidecar = Sidecar(store_dir, session_id)
        state = self.sidecar.load()
        self.calibration = Calibration(state.factor)
        self._raw = 0
        self._dirty = False
        self._exhaustion_reported = False
        self.before_compact: Callable[[str], Awaitable[None]] | None = None
        """PreCompact hooks: awaited with the reason before a compaction takes effect."""
        if self.sidecar.warning is not None:
            emit(Error(code="native.compaction.sidecar", error_class="unknown",
                       message=self.sidecar.warning))

    async def before_model(self, request: LlmRequest) -> None:
        """Replay the sticky decisions on ``request``, then compact it if it is too big."""
        decisions = self.sidecar.state.decisions
        if not self.config.enabled and not decisions:
            self._raw = 0  # nothing measured: nothing to calibrate
            return
        data = [c.model_dump(mode="json", exclude_none=True) for c in request.contents]
        items = replay(entries(data), decisions)
        fixed = _fixed(request)
        raw = fixed + sum(e.tokens for e in items)
        config = self.config
        if config.enabled and self.calibration.scale(raw) >= config.trigger * config.context_tokens:
            outcome = await self._compact(items, fixed, config, "auto")
            items = outcome.entries
            raw = fixed + sum(e.tokens for e in items)
        request.contents = _rebuild(request.contents, items)
        self._raw = raw

    def after_model(self, response: LlmResponse) -> None:
        """Calibrate from the prompt tokens a final response reports."""
        usage = response.usage_metadata
        if response.partial or usage is None or not usage.prompt_token_count:
            return
        factor = self.calibration.observe(self._raw, usage.prompt_token_count)
        self._dirty = self._dirty or factor != self.sidecar.state.factor
        self.sidecar.state.factor = factor

    def close(self) -> None:
        """Save the calibration learnt since the last save, if it changed."""
        if self._dirty:
            self.sidecar.save()
            self._dirty = False

    async def compact_history(self, contents: Sequence[types.Content]) -> None:
        """``session.compact``: compact an idle session's history as far as it goes."""
        data = [c.model_dump(mode="json", exclude_none=True) for c in _visible(contents)]
        data.append({"role": "user", "parts": [{"text": "(the next turn)"}]})  # never sent
        items = replay(entries(data), self.sidecar.state.decisions)
        manual = msgspec.structs.replace(self.config, target=0.0,
                                         context_tokens=max(1, self.config.context_tokens))
        await self._compact(items, 0, manual, "manual")

    async def _compact(self, items: list[Entry], fixed: int, config: CompactionConfig,
                       reason: str) -> Outcome:
        outcome = compact(items, fixed=fixed, config=config, calibration=self.calibration)
        if self.before_compact is not None and (outcome.decisions or reason == "manual"):
            await self.before_compact(reason)
        warning: str | None = None
        summarized = False
        decisions: list[Decision] = list(outcome.decisions)
        if config.mode == "summarize" and outcome.dropped:
            text, warning = await self._summary(outcome.dropped)
            if text is not None:
                keys = [d.key for d in decisions if isinstance(d, Drop)]
                decisions = [d for d in decisions if not isinstance(d, Drop)]
                decisions.append(Summary(keys=keys, text=text))
                outcome.entries = replay(items, decisions)
                outcome.tokens_after = self.calibration.scale(
                    fixed + sum(e.tokens for e in outcome.entries))
                summarized = True
        if decisions:
            self.sidecar.state.decisions = [*self.sidecar.state.decisions, *decisions]
            before = self.sidecar.warning
            self.sidecar.save()
            self._dirty = False
            if self.sidecar.warning is not before:
                warning = self.sidecar.warning
        # Exhaustion alone (nothing left to compact) is reported once, not at every request; a
        # manual compaction aims at zero, so "still above the target" says nothing there.
        exhausted = outcome.exhausted and reason == "auto"
        first_exhaustion = exhausted and not self._exhaustion_reported
        self._exhaustion_reported = self._exhaustion_reported or exhausted
        if decisions or reason == "manual" or first_exhaustion:
            self._emit(Compaction(
                reason=reason, mode=self.config.mode,  # type: ignore[arg-type]
                context_tokens=self.config.context_tokens, tokens_before=outcome.tokens_before,
                tokens_after=outcome.tokens_after, elided=outcome.elided,
                dropped_turns=len(outcome.dropped), summarized=summarized,
                exhausted=exhausted, warning=warning))
        return outcome

    async def _summary(self, dropped: list[list[dict[str, Any]]]) -> tuple[str | None, str | None]:
        attempts = 1 + self.config.summary_retries
        last = ""
        for _ in range(attempts):
            try:
                text = (await self._summarize(dropped)).strip()
            except Exception as exc:  # a model failure of any kind: retry, then fall back
                last = f"{type(exc).__name__}: {exc}"
                log.warning("compaction summary failed: %s", last)
                continue
            if text:
                return text, None
            last = "the model answered with no text"
        return None, (f"no summary after {attempts} attempt(s) ({last}); "
                      "the turns were dropped without one")


def _visible(contents: Sequence[types.Content]) -> list[types.Content]:
    """Contents as a model request would carry them: confirmation traffic left out."""
    out: list[types.Content] = []
    for content in contents:
        parts = [p for p in content.parts or []
                 if not (p.function_call is not None and p.function_call.name == _CONFIRMATION)
                 and not (p.function_response is not None
                          and p.function_response.name == _CONFIRMATION)]
        if parts:
            out.append(content.model_copy(update={"parts": parts}))
    return out


def _fixed(request: LlmRequest) -> int:
    """The raw estimate of what compaction never touches: system instruction, declarations."""
    config = request.config
    system: Any = config.system_instruction
    if system is None or isinstance(system, str):
        text = system or ""
    elif isinstance(system, types.Content):
        text = "".join(p.text or "" for p in system.parts or [])
    else:
        text = str(system)
    total = system_tokens(text)
    for tool in config.tools or []:
        for declaration in getattr(tool, "function_declarations", None) or []:
            total += declaration_tokens(declaration.model_dump(mode="json", exclude_none=True))
    return total


def _rebuild(contents: list[types.Content], items: Sequence[Entry]) -> list[types.Content]:
    """The request's contents for ``items``: originals where unchanged, copies with elided
    bodies where changed, new contents for summaries."""
    out: list[types.Content] = []
    for item in items:
        if item.origin is None:
            out.append(types.Content.model_validate(item.data))
            continue
        original = contents[item.origin]
        changed = [i for i, p in enumerate(item.data.get("parts") or [])
                   if (p.get("function_response") or {}).get("response") == ELIDED_BODY]
        if not changed:
            out.append(original)
            continue
        copy = original.model_copy(deep=True)
        for index in changed:
            response = (copy.parts or [])[index].function_response
            if response is not None:
                response.response = dict(ELIDED_BODY)
        out.append(copy)
    return out


SUMMARY_SYSTEM = (
    "You summarise the earlier part of a conversation between a user and a coding agent, so "
    "that the agent can continue without it. Keep what the agent will need: the user's goals "
    "and constraints, decisions taken, files read or changed and what was learnt from them, "
    "commands run and their outcomes, open problems and next steps. Be concise and factual; "
    "write the summary only.")

_BODY_LIMIT = 2000
_TRANSCRIPT_LIMIT = 200_000


def model_summarizer(current: Callable[[], Any]) -> Summarizer:
    """A ``Summarizer`` that asks the model ``current()`` returns (the session's current one)
    for a summary, in one non-streaming call."""

    async def summarize(dropped: list[list[dict[str, Any]]]) -> str:
        request = LlmRequest(
            contents=[types.Content(role="user", parts=[types.Part(text=transcript(dropped))])],
            config=types.GenerateContentConfig(system_instruction=SUMMARY_SYSTEM))
        texts: list[str] = []
        async for response in current().generate_content_async(request, stream=False):
            if response.error_code:
                raise RuntimeError(f"{response.error_code}: {response.error_message}")
            if not response.partial and response.content is not None:
                texts += [p.text for p in response.content.parts or []
                          if p.text and not p.thought]
        return "".join(texts)

    return summarize


def transcript(dropped: list[list[dict[str, Any]]]) -> str:
    """The dropped turns as plain text for the summariser (long tool bodies cut, the oldest
    text cut first when the whole is too long)."""
    lines = ["Summarise this conversation:"]
    for turn in dropped:
        for content in turn:
            role = content.get("role") or "user"
            for part in content.get("parts") or []:
                if part.get("text") and not part.get("thought"):
                    lines.append(f"{role}: {part['text']}")
                elif part.get("function_call") is not None:
                    call = part["function_call"]
                    lines.append(f"tool call {call.get('name')}: "
                                 f"{_cut(msgspec.json.encode(call.get('args') or {}).decode())}")
                elif part.get("function_response") is not None:
                    response = part["function_response"]
                    body = msgspec.json.encode(response.get("response") or {}).decode()
                    lines.append(f"tool result {response.get('name')}: {_cut(body)}")
    text = "\n".join(lines)
    return text if len(text) <= _TRANSCRIPT_LIMIT else text[-_TRANSCRIPT_LIMIT:]


def _cut(text: str) -> str:
    return text if len(text) <= _BODY_LIMIT else text[:_BODY_LIMIT] + " …[cut]"
