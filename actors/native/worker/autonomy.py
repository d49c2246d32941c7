"""Autonomous runs: one prompt, then turn after turn until the goal is done or a budget is spent.

Theory of operation. A session started with ``Start.autonomous`` (``protocol.native.Autonomy``)
runs every prompt as an ``AutonomousRun``, which the worker treats as one turn (it has
``Turn``'s interface and delegates steering, interrupts and decisions to the inner turn that
runs now). The run:

1. runs the prompt (the goal, for a new session) as an ordinary ``Turn`` whose ``result`` it
   keeps to itself;
2. after each inner turn adds its usage, cost and time to the ``RunProgress``, decides whether
   to stop (in this order: interrupted, turn error under ``on_turn_error = "abort"``, the model
   called ``report_done`` → ``completed``, ``max_turns_exceeded``, ``max_tokens_exceeded``,
   ``max_cost_exceeded``, ``wallclock_exceeded``), writes it to the progress file next to the
   session store (atomically, fsynced) and emits a ``checkpoint`` event;
3. if it goes on, sends the continuation prompt (a ``user`` event, then the next inner turn);
4. at the end emits one ``result`` with the stop reason and the run's whole usage and cost.

A budget stops the run once reached: ``max_turns = 3`` runs exactly three turns, and with
``max_input_tokens = 60`` the run ends after the turn that brings the total to 60 or more. The
wallclock and ``per_turn_timeout_s`` also interrupt an inner turn that outlives them (a timed-out
turn is a turn error: ``abort`` ends the run ``turn_error``, ``retry`` runs the same message
again, ``skip`` goes on with the continuation). A cost budget needs priced models: a call with
no price leaves the run's cost unknown and that budget unchecked.

When the worker dies mid-run (the session restarts it), the progress file still says
``running``: ``resume_text`` gives the continuation, and the new worker starts an
``AutonomousRun`` from the progress file at once, with turns, tokens, cost and elapsed time
carried forward; its first event is a ``checkpoint {resumed: true}``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from protocol.events import Checkpoint, Decision, Event, Result, Usage, User
from protocol.native import Autonomy

from .turn import Turn

__all__ = ["INSTRUCTIONS", "REPORT_DONE", "AutonomousRun", "DoneBox", "ReportDone", "RunProgress",
           "continuation", "progress_path", "start_run"]

REPORT_DONE = "report_done"
INSTRUCTIONS = f"""This is an autonomous run: you work toward the goal below over several turns
without a person answering. When the goal is reached (or cannot be), call {REPORT_DONE} with a
short summary, then stop. Goal: {{goal}}"""

MakeTurn = Callable[[str, Callable[[Event], None]], Turn]
"""Builds an inner turn for a message, emitting through the given function."""


class RunProgress(msgspec.Struct, kw_only=True):
    """An autonomous run's progress, persisted after every turn (the checkpoint)."""

    version: int = 1
    turns: int = 0
    usage: Usage = Usage()
    cost_usd: float | None = 0.0
    elapsed_s: float = 0.0
    done: bool = False
    stop_reason: str | None = None
    """Set when the run ended; a progress file without one is a run to resume."""

    @classmethod
    def load(cls, path: Path) -> RunProgress | None:
        """The progress file at ``path``, or ``None`` if there is none (or it is unreadable)."""
        try:
            return msgspec.json.decode(path.read_bytes(), type=cls)
        except (OSError, msgspec.DecodeError):
            return None

    def save(self, path: Path) -> None:
        """Write atomically and durably (temporary file, fsync, rename)."""
        temporary = path.with_suffix(".tmp")
        with open(temporary, "wb") as handle:
            handle.write(msgspec.json.encode(self))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)


def progress_path(store_dir: str, session_id: str) -> Path:
    """The checkpoint file beside the session's store file."""
    return Path(store_dir) / f"{session_id}.autonomy.json"


def continuation(autonomy: Autonomy, progress: RunProgress) -> str:
    """The user message between two turns."""
    return (f"Continue working toward the goal: {autonomy.goal}\n(Turn {progress.turns + 1} of at "
            f"most {autonomy.max_turns}. Call {REPORT_DONE} when it is done.)")


class DoneBox:
    """Whether the model called ``report_done`` since the box was last emptied."""

    def __init__(self) -> None:
        self.done = False
        self.summary = ""


class ReportDone(BaseTool):
    """The model's way to end an autonomous run: the run stops after this turn."""

    def __init__(self, box: DoneBox) -> None:
        super().__init__(name=REPORT_DONE,
                         description="Report that the goal is done (or cannot be done); the "
                                     "autonomous run ends after this turn.")
        self._box = box

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name, description=self.description,
            parameters_json_schema={"type": "object", "properties": {
                "summary": {"type": "string", "description": "what was done"}}})

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        self._box.done = True
        self._box.summary = str(args.get("summary") or "")
        return {"output": "Recorded. The run ends after this turn."}


def start_run(text: str, *, autonomy: Autonomy, store_dir: str, session_id: str, box: DoneBox,
              make_turn: MakeTurn, emit: Callable[[Event], None],
              resuming: bool) -> AutonomousRun:
    """The run for a prompt: the unfinished one in the progress file when ``resuming`` (a restarted
    worker), else a new one with fresh budgets."""
    path = progress_path(store_dir, session_id)
    progress = RunProgress.load(path) if resuming else None
    resumed = progress is not None and progress.stop_reason is None
    if progress is None or not resumed:
        progress = RunProgress()
        box.done = False
    return AutonomousRun(text, autonomy=autonomy, progress=progress, path=path, box=box,
                         make_turn=make_turn, emit=emit, resumed=resumed)


class AutonomousRun:
    """One autonomous run, as the worker's running turn (see the module docstring)."""

    def __init__(self, text: str, *, autonomy: Autonomy, progress: RunProgress, path: Path,
                 box: DoneBox, make_turn: MakeTurn, emit: Callable[[Event], None],
                 resumed: bool = False) -> None:
        self.text = text
        self._autonomy = autonomy
        self._progress = progress
        self._path = path
        self._box = box
        self._make_turn = make_turn
        self._emit = emit
        self._resumed = resumed
        self._inner: Turn | None = None
        self._inner_result: Result | None = None
        self._abort = False
        self._steers: list[str] = []

    # --- Turn's interface, delegated to the inner turn ----------------------------------

    @property
    def paused(self) -> bool:
        return self._inner is not None and self._inner.paused

    def steer(self, text: str) -> None:
        if self._inner is not None:
            self._inner.steer(text)
        else:
            self._steers.append(text)

    def take_steers(self) -> types.Content | None:
        return self._inner.take_steers() if self._inner is not None else None

    def leftover(self) -> list[str]:
        left, self._steers = self._steers, []
        return left

    def interrupt(self) -> None:
        self._abort = True
        if self._inner is not None:
            self._inner.interrupt()

    def decide(self, permission_id: str, decision: Decision) -> bool:
        return self._inner is not None and self._inner.decide(permission_id, decision)

    def add_usage(self, model: str, usage: Usage) -> None:
        """A subagent's model call counts in the turn that runs it."""
        if self._inner is not None:
            self._inner.add_usage(model, usage)

    # --- the run ----------------------------------------------------------------------

    async def run(self) -> None:
        """Run turns until a stop reason; then the one ``result`` (see the module docstring)."""
        progress, autonomy = self._progress, self._autonomy
        started = time.monotonic()
        carried = progress.elapsed_s
        if self._resumed:
            self._emit(self._checkpoint(resumed=True))
            self._emit(User(text=self.text))
        message = self.text
        stop: str | None = None
        try:
            while stop is None:
                failed = await self._one(message, carried + time.monotonic() - started)
                progress.elapsed_s = round(carried + time.monotonic() - started, 3)
                stop = self._stop_reason(failed)
                progress.stop_reason = stop
                progress.done = progress.done or self._box.done
                progress.save(self._path)
                self._emit(self._checkpoint())
                if stop is None and not (failed and autonomy.on_turn_error == "retry"):
                    message = continuation(autonomy, progress)
                    if self._steers:
                        message = "\n\n".join([*self.leftover(), message])
                    self._emit(User(text=message))
        finally:
            self._inner = None
            self._emit(Result(stop_reason=stop or "interrupted", is_error=stop == "turn_error",
                              usage=progress.usage, cost_usd=progress.cost_usd,
                              duration_ms=round((time.monotonic() - started) * 1000)))

    async def _one(self, message: str, elapsed: float) -> bool:
        """Run one inner turn; ``True`` when it failed (an error result or a timeout)."""
        self._inner_result = None
        inner = self._make_turn(message, self._capture)
        for text in self.leftover():
            inner.steer(text)
        self._inner = inner
        timeout = self._autonomy.per_turn_timeout_s
        if self._autonomy.max_wallclock_s is not None:
            left = max(self._autonomy.max_wallclock_s - elapsed, 0.0)
            timeout = left if timeout is None else min(timeout, left)
        task = asyncio.ensure_future(inner.run())
        timed_out = False
        try:
            done, _ = await asyncio.wait([task], timeout=timeout)
            if not done:
                timed_out = True
                inner.interrupt()
            await task
        finally:
            if not task.done():
                task.cancel()
            self._steers.extend(inner.leftover())  # steered after its end: not lost
        self._inner = None
        self._progress.turns += 1
        result: Result | None = self._inner_result
        if result is None:
            return True
        self._add(result)
        return timed_out or result.is_error

    def _capture(self, event: Event) -> None:
        if isinstance(event, Result):
            self._inner_result = event
        else:
            self._emit(event)

    def _add(self, result: Result) -> None:
        progress, used = self._progress, result.usage
        total = progress.usage
        progress.usage = Usage(input_tokens=total.input_tokens + used.input_tokens,
                             output_tokens=total.output_tokens + used.output_tokens,
                             cache_read_tokens=total.cache_read_tokens + used.cache_read_tokens,
                             cache_write_tokens=total.cache_write_tokens + used.cache_write_tokens)
        if progress.cost_usd is not None and result.cost_usd is not None:
            progress.cost_usd = round(progress.cost_usd + result.cost_usd, 8)
        elif used.input_tokens or used.output_tokens:
            progress.cost_usd = None  # an unpriced call: the run's cost is unknown

    def _stop_reason(self, failed: bool) -> str | None:
        autonomy, progress = self._autonomy, self._progress
        usage = progress.usage
        wallclock = autonomy.max_wallclock_s
        if self._abort:
            return "interrupted"
        if wallclock is not None and progress.elapsed_s >= wallclock:
            return "wallclock_exceeded"
        if failed and autonomy.on_turn_error == "abort":
            return "turn_error"
        if self._box.done:
            return "completed"
        if progress.turns >= autonomy.max_turns:
            return "max_turns_exceeded"
        if (autonomy.max_input_tokens is not None
                and usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
                >= autonomy.max_input_tokens) or (autonomy.max_output_tokens is not None
                                                  and usage.output_tokens
                                                  >= autonomy.max_output_tokens):
            return "max_tokens_exceeded"
        if (autonomy.max_cost_usd is not None and progress.cost_usd is not None
                and progress.cost_usd >= autonomy.max_cost_usd):
            return "max_cost_exceeded"
        return None

    def _checkpoint(self, *, resumed: bool = False) -> Checkpoint:
        progress = self._progress
        return Checkpoint(turn=progress.turns, usage=progress.usage, cost_usd=progress.cost_usd,
                          elapsed_s=progress.elapsed_s, done=progress.done or self._box.done,
                          resumed=resumed, stop_reason=progress.stop_reason)
