"""One turn of a native session: from a prompt to its ``result``, over one or more invocations.

Theory of operation. A corral turn is a loop of ADK invocations (``Runner.run_async``):

1. the first runs the prompt; events are mapped (``EventMapper``) and emitted as they come, and
   every final model response adds its usage (and cost) to the turn's account;
2. when it stops because tools asked for confirmation (the app is resumable, so ADK pauses),
   the turn waits for a decision (or an interrupt), then resumes the invocation with the
   ``ToolConfirmation`` answers as function responses; the approved tools run, refused ones
   answer ``REFUSED``, and undecided ones keep it paused;
3. when it ends while steering prompts are still queued (they arrived during the last model
   call, after the last chance to inject them), one more invocation runs them: a further model
   call in the same turn.

Steering prompts that arrive while the turn runs are injected by the agent's
``before_model_callback`` (``take_steers``) before the next model call: appended to the session as
user events and to that request's contents.

``interrupt`` sets the invocation's abort signal: ADK cancels the in-flight model call (closing
its HTTP stream) or tool (bash kills its process group) and seals the unanswered calls; a turn
paused on confirmations stops waiting. Either way it ends ``interrupted``, not an error. A model
failure (``ModelError``) becomes its ``error`` event and an error ``result``.

Hooks (``TurnHooks``): a UserPromptSubmit block ends the turn before any model call (an
``error`` event, then ``result {blocked}``); when the turn would end normally, Stop hooks may
keep it going with their reason as the next user message (at most ``_MAX_STOP_CONTINUES``
times; the hook sees ``stop_hook_active: true`` after the first).

Before ``result`` is emitted the store is flushed, so the turn's events are on disk first.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import aclosing
from typing import Protocol

from google.adk.agents._streaming_mode import StreamingMode
from google.adk.agents.run_config import RunConfig
from google.adk.runners import Runner
from google.genai import types

from actors.native.worker.accounting import TurnAccount
from actors.native.worker.askrules import AskRules
from actors.native.models import ModelError, usage_of
from protocol.events import Decision, Error, Event, Result, Usage

from .agent import MODEL_KEY, NOT_RUN, USER_ID
from .events import CONFIRMATION, EventMapper
from .store import JsonlSessionService

__all__ = ["Turn"]

log = logging.getLogger("corral.native.turn")

_RUN_CONFIG = RunConfig(streaming_mode=StreamingMode.SSE)
_MAX_STOP_CONTINUES = 5
"""How many times Stop hooks may keep one turn going."""


class TurnHooks(Protocol):
    """The session's UserPromptSubmit and Stop hooks (``worker.depth.Depth``): each answers
    the reason to block (the prompt) or to go on (the turn), or ``None``."""

    async def on_prompt(self, text: str) -> str | None: ...

    async def on_stop(self, active: bool) -> str | None: ...


class Turn:
    """One running turn; the worker calls ``steer``/``interrupt``/``decide`` while ``run`` runs."""

    def __init__(self, text: str, *, runner: Runner, session_id: str,
                 store: JsonlSessionService, mapper: EventMapper, ask_rules: AskRules,
                 account: TurnAccount, emit: Callable[[Event], None],
                 hooks: TurnHooks | None = None) -> None:
        self.text = text
        self._runner = runner
        self._session_id = session_id
        self._store = store
        self.mapper = mapper
        self._ask_rules = ask_rules
        self._account = account
        self._emit = emit
        self._hooks = hooks
        self._steers: list[str] = []
        self._decisions: dict[str, Decision] = {}
        self._abort = asyncio.Event()
        self._wake = asyncio.Event()
        self.paused = False
        """True while the invocation is paused, waiting for permission decisions."""

    # --- what the worker calls ---------------------------------------------------------

    def steer(self, text: str) -> None:
        """Queue ``text`` for injection before the next model call of this turn."""
        self._steers.append(text)

    def take_steers(self) -> types.Content | None:
        """The queued steering prompts as one user content (then the queue is empty)."""
        if not self._steers:
            return None
        content = _user(self._steers)
        self._steers = []
        return content

    def leftover(self) -> list[str]:
        """Steering prompts that never reached the model (the turn ended first); emptied."""
        left, self._steers = self._steers, []
        return left

    def add_usage(self, model: str, usage: Usage) -> None:
        """Count a model call made for this turn elsewhere (a subagent's) in its account."""
        self._account.add(model, usage)

    def interrupt(self) -> None:
        """Abort the in-flight model call or tool, or stop waiting for decisions."""
        self._abort.set()
        self._wake.set()

    def decide(self, permission_id: str, decision: Decision) -> bool:
        """Record the answer to ``permission_id``; ``False`` if this turn is not waiting on it."""
        if permission_id not in self.mapper.waiting or permission_id in self._decisions:
            return False
        self._decisions[permission_id] = decision
        self._wake.set()
        return True

    # --- the turn ---------------------------------------------------------------------

    async def run(self) -> None:
        """Run the turn to its ``result`` (see the module docstring). Cancellation (shutdown)
        propagates after the result is emitted."""
        started = time.monotonic()
        stop, is_error = "end_turn", False
        message: types.Content | None = _user([self.text])
        continued = 0
        try:
            hooks = self._hooks
            blocked = await hooks.on_prompt(self.text) if hooks is not None else None
            if blocked is not None:
                self._emit(Error(code="native.hooks.prompt_blocked", error_class="unknown",
                                 message=f"a UserPromptSubmit hook blocked the prompt: {blocked}"))
                message, stop, is_error = None, "blocked", True
            while message is not None:
                await self._invoke(message)
                message = None
                if self._abort.is_set():
                    stop = "interrupted"
                elif self.mapper.waiting:
                    message = await self._answers()
                    stop = "interrupted" if message is None else stop
                else:
                    message = self.take_steers()
                if message is None and stop == "end_turn" and hooks is not None \
                        and continued < _MAX_STOP_CONTINUES:
                    reason = await hooks.on_stop(continued > 0)
                    if reason is not None:  # a Stop hook wants more: its reason is the prompt
                        continued += 1
                        message = _user([reason])
        except ModelError as exc:
            log.warning("turn failed: %s: %s", exc.code, exc.message)
            self._emit(exc.event())
            stop, is_error = "error", True
        except asyncio.CancelledError:
            stop = "interrupted"
            raise
        except Exception as exc:  # a bug or an ADK failure: the turn ends, the worker goes on
            log.exception("native turn failed")
            self._emit(Error(code="native.unknown.error", error_class="unknown",
                             message=f"the turn failed: {type(exc).__name__}: {exc}"))
            stop, is_error = "error", True
        finally:
            for event in self.mapper.unanswered(NOT_RUN):
                self._emit(event)
            await self._store.flush()
            self._emit(Result(stop_reason=stop, is_error=is_error, usage=self._account.usage,
                              cost_usd=self._account.cost_usd,
                              duration_ms=round((time.monotonic() - started) * 1000)))

    async def _invoke(self, message: types.Content) -> None:
        events = self._runner.run_async(user_id=USER_ID, session_id=self._session_id,
                                        new_message=message, run_config=_RUN_CONFIG,
                                        abort_signal=self._abort)
        async with aclosing(events) as stream:
            async for event in stream:
                for out in self.mapper.map(event):
                    self._emit(out)
                if event.partial or event.author == "user":
                    continue
                usage = usage_of(event)
                if usage is not None:
                    model = str((event.custom_metadata or {}).get(MODEL_KEY, ""))
                    self._account.add(model.partition("/")[2], usage)

    async def _answers(self) -> types.Content | None:
        """The decisions made so far as confirmation responses (waits for at least one), or
        ``None`` when the turn is interrupted first."""
        while not self._decisions:
            if self._abort.is_set():
                return None
            self._wake.clear()
            self.paused = True
            try:
                await self._wake.wait()
            finally:
                self.paused = False
        if self._abort.is_set():
            return None
        parts = []
        for permission_id, decision in self._decisions.items():
            pending = self.mapper.waiting.pop(permission_id)
            if decision == "allow_always":
                self._ask_rules.allow_always(pending.tool)
            parts.append(types.Part(function_response=types.FunctionResponse(
                id=permission_id, name=CONFIRMATION,
                response={"confirmed": decision != "deny"})))
        self._decisions.clear()
        return types.Content(role="user", parts=parts)


def _user(texts: list[str]) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text) for text in texts])
