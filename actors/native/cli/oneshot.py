"""One bounded, ephemeral native run (``corral run``) and the tool-calling probe (``corral probe``).

``run_once`` runs one non-streaming ADK invocation of one prompt with exactly the tools asked
for, in an in-memory session that is gone when it returns. Its bounds (``RunLimits``), all
positive:

* ``max_model_calls`` bounds the whole invocation. A response that asks for tools on the last
  allowed call is cut: its calls never run and the outcome is ``max_model_calls``.
* ``max_tool_calls`` bounds the tool calls of the whole invocation. A response whose calls
  would pass it is rejected before any of them runs (``max_tool_calls``).
* ``max_output_tokens`` is each model request's output budget; a response the model cut there
  ends the run ``output_truncated``.
* ``max_text_bytes`` bounds the returned text (cut at a UTF-8 boundary, ``text_truncated``).

The tools' own output bounds (``actors.native.tools.Limits``) apply as in a session.

``probe`` makes one direct, non-streaming model request that advertises a single inert
declaration (``corral_ping`` with a fixed marker); it succeeds only when the answer is exactly
that one call with that marker. Nothing runs, no session exists.

Outcome codes are stable (``OUTCOMES``); a run's usage is always reported, also on failure.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal

import msgspec
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.run_config import RunConfig
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from actors.native.worker.askrules import AskRules
from actors.native.models import ModelError, usage_of
from actors.native.tools import TOOLS, Limits, Workspace
from actors.native.worker.agent import CodingTool
from protocol.events import Usage
from protocol.models import Permissions

__all__ = ["OUTCOMES", "PING", "PING_MARKER", "Outcome", "RunLimits", "RunResult", "RunUsage",
           "probe", "run_once"]

log = logging.getLogger("corral.native.oneshot")

Outcome = Literal["ok", "bad_request", "model_error", "output_truncated", "text_truncated",
                  "max_model_calls", "max_tool_calls", "no_final_response", "failed",
                  "tool_calling_unsupported"]
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]

Progress = Callable[[str], None]

PING = "corral_ping"
PING_MARKER = "corral-probe-7f3a"
_PROBE_PROMPT = (f"This is a tool-calling check. Call the {PING} tool exactly once with "
                 f"marker set to \"{PING_MARKER}\". Do not answer with text.")
_APP, _USER = "corral_run", "corral"
_INSTRUCTION = """You are corral's coding agent, run once for one task in the directory {cwd}.
Use the tools you have to do it, then answer with the result. Paths are relative to that
directory. Be concise."""


class RunLimits(msgspec.Struct, kw_only=True, frozen=True):
    """The bounds of one run (see the module docstring); each must be positive."""

    max_model_calls: int = 16
    max_tool_calls: int = 64
    max_output_tokens: int = 8192
    max_text_bytes: int = 64 * 1024

    def problem(self) -> str | None:
        """Why these limits are invalid, or ``None``."""
        bad = [f for f in self.__struct_fields__ if getattr(self, f) < 1]
        return f"limits must be positive: {', '.join(bad)}" if bad else None


class RunUsage(msgspec.Struct, kw_only=True):
    """Tokens over the run's model calls, and the calls made."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    model_calls: int = 0
    tool_calls: int = 0

    def add(self, usage: Usage) -> None:
        """Count one model response's token usage."""
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += usage.cache_write_tokens


class RunResult(msgspec.Struct, kw_only=True):
    """What a run (or probe) ended with: ``text`` may be partial when ``outcome`` is not ``ok``;
    ``message`` says why it failed."""

    text: str = ""
    outcome: Outcome = "ok"
    usage: RunUsage = msgspec.field(default_factory=RunUsage)
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


async def run_once(llm: BaseLlm, prompt: str, *, cwd: str, tools: Sequence[str] | None = None,
                   limits: RunLimits = RunLimits(), tool_limits: Limits = Limits(),
                   progress: Progress | None = None) -> RunResult:
    """Run ``prompt`` once (see the module docstring). ``tools`` names exactly the coding tools
    the model gets (``None``: all of them; ``[]``: none). Never raises for a model or tool
    failure: that is the result's ``outcome``."""
    by_name = {spec.name: spec for spec in TOOLS}
    wanted = list(by_name) if tools is None else list(dict.fromkeys(tools))
    unknown = [name for name in wanted if name not in by_name]
    problem = limits.problem() or (f"unknown tools: {', '.join(unknown)} (known: "
                                   f"{', '.join(by_name)})" if unknown else None)
    if problem:
        return RunResult(outcome="bad_request", message=problem)
    try:
        workspace = Workspace(cwd, limits=tool_limits)
    except (OSError, ValueError) as exc:
        return RunResult(outcome="bad_request", message=f"cwd {cwd!r}: {exc}")
    ask_rules = AskRules(Permissions(mode="auto"))
    state = _RunState(limits, progress)
    agent = LlmAgent(
        name="corral", model=llm, instruction=lambda _ctx: _INSTRUCTION.format(cwd=workspace.root),
        tools=[CodingTool(by_name[name], workspace, ask_rules) for name in wanted],
        generate_content_config=types.GenerateContentConfig(
            max_output_tokens=limits.max_output_tokens),
        before_model_callback=state.before_model, after_model_callback=state.after_model)
    sessions = InMemorySessionService()
    runner = Runner(app_name=_APP, agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name=_APP, user_id=_USER,
                                            session_id=uuid.uuid4().hex)
    message = types.Content(role="user", parts=[types.Part(text=prompt)])
    try:
        async for event in runner.run_async(user_id=_USER, session_id=session.id,
                                            new_message=message, run_config=RunConfig()):
            usage = usage_of(event) if event.author != "user" else None
            if usage is not None:
                state.usage.add(usage)
    except ModelError as exc:
        state.fail("model_error", f"{exc.code}: {exc.message}")
    except Exception as exc:  # an ADK or tool failure: a result, never a traceback
        log.debug("one-shot run failed", exc_info=True)
        state.fail("failed", f"{type(exc).__name__}: {exc}")
    finally:
        await runner.close()
        await sessions.delete_session(app_name=_APP, user_id=_USER, session_id=session.id)
    return state.result()


async def probe(llm: BaseLlm, *, max_output_tokens: int = 256) -> RunResult:
    """One non-streaming request advertising only ``corral_ping``; ``ok`` only when the answer
    is exactly one call of it with the marker (see the module docstring)."""
    declaration = types.FunctionDeclaration(
        name=PING, description="Inert connectivity check: does nothing and returns nothing.",
        parameters_json_schema={"type": "object", "required": ["marker"],
                                "properties": {"marker": {"type": "string"}},
                                "additionalProperties": False})
    request = LlmRequest(
        model=llm.model,
        contents=[types.Content(role="user", parts=[types.Part(text=_PROBE_PROMPT)])],
        config=types.GenerateContentConfig(max_output_tokens=max_output_tokens,
                                           tools=[types.Tool(function_declarations=[declaration])]))
    usage = RunUsage(model_calls=1)
    final: LlmResponse | None = None
    try:
        async for response in llm.generate_content_async(request, stream=False):
            if not response.partial:
                final = response
    except ModelError as exc:
        return RunResult(outcome="model_error", usage=usage, message=f"{exc.code}: {exc.message}")
    if final is None:
        return RunResult(outcome="no_final_response", usage=usage,
                         message="the model sent no final response")
    counted = usage_of(final)
    if counted is not None:
        usage.add(counted)
    parts = final.content.parts if final.content and final.content.parts else []
    calls = [p.function_call for p in parts if p.function_call is not None]
    text = "".join(p.text for p in parts if p.text and not p.thought)
    exact = len(calls) == 1 and calls[0].name == PING
    if exact and (calls[0].args or {}) == {"marker": PING_MARKER}:
        return RunResult(text=text, usage=usage)
    if final.finish_reason == types.FinishReason.MAX_TOKENS and not calls:
        return RunResult(text=text, outcome="output_truncated", usage=usage,
                         message=f"the answer was cut at {max_output_tokens} output tokens")
    seen = ", ".join(f"{c.name}({c.args or {}})" for c in calls) or f"text {text[:80]!r}"
    return RunResult(text=text, outcome="tool_calling_unsupported", usage=usage,
                     message=f"the model did not make exactly the {PING} call; it answered {seen}")


class _RunState:
    """Counts calls against the limits from the agent's model callbacks; holds the outcome."""

    def __init__(self, limits: RunLimits, progress: Progress | None) -> None:
        self.limits = limits
        self.usage = RunUsage()
        self.outcome: Outcome | None = None
        self.message = ""
        self.text: str | None = None
        self._progress = progress

    def fail(self, outcome: Outcome, message: str) -> None:
        if self.outcome is None:
            self.outcome, self.message = outcome, message

    async def before_model(self, ctx: CallbackContext, request: LlmRequest) -> LlmResponse | None:
        if self.outcome is not None or self.usage.model_calls >= self.limits.max_model_calls:
            # Never reached with the cut in after_model; a guard, not the budget itself.
            self.fail("max_model_calls", f"stopped after {self.usage.model_calls} model calls")
            return LlmResponse(content=types.Content(role="model", parts=[]))
        self.usage.model_calls += 1
        self._say(f"model call {self.usage.model_calls}/{self.limits.max_model_calls}")
        return None

    async def after_model(self, ctx: CallbackContext, response: LlmResponse) -> LlmResponse | None:
        if response.partial:
            return None
        parts = list(response.content.parts or []) if response.content else []
        calls = [p.function_call for p in parts if p.function_call is not None]
        self.text = "".join(p.text for p in parts if p.text and not p.thought)
        cut: str | None = None
        if calls and self.usage.model_calls >= self.limits.max_model_calls:
            self.fail("max_model_calls", f"the model asked for tools after its last allowed call "
                                         f"({self.limits.max_model_calls})")
            cut = "cut"
        elif self.usage.tool_calls + len(calls) > self.limits.max_tool_calls:
            self.fail("max_tool_calls", f"the model asked for {len(calls)} tool call(s) with "
                                        f"{self.limits.max_tool_calls - self.usage.tool_calls} "
                                        "left; none of them ran")
            cut = "cut"
        elif response.finish_reason == types.FinishReason.MAX_TOKENS:
            self.fail("output_truncated", f"the model's answer was cut at "
                                          f"{self.limits.max_output_tokens} output tokens")
            cut = "cut" if calls else None
        if cut is not None:
            kept = [p for p in parts if p.function_call is None]
            return response.model_copy(update={"content": types.Content(role="model", parts=kept)})
        self.usage.tool_calls += len(calls)
        for call in calls:
            self._say(f"tool {call.name} {_brief(call.args)}")
        return None

    def result(self) -> RunResult:
        text = self.text
        outcome, message = self.outcome, self.message
        if text is None:
            text = ""
            if outcome is None:
                outcome, message = "no_final_response", "the model gave no final response"
        raw = text.encode()
        if len(raw) > self.limits.max_text_bytes:
            text = raw[:self.limits.max_text_bytes].decode(errors="ignore")
            if outcome is None:
                outcome, message = "text_truncated", (f"the answer ({len(raw)} bytes) was cut at "
                                                      f"{self.limits.max_text_bytes} bytes")
        return RunResult(text=text, outcome=outcome or "ok", usage=self.usage, message=message)

    def _say(self, line: str) -> None:
        if self._progress is not None:
            self._progress(line)


def _brief(args: dict[str, Any] | None) -> str:
    shown = msgspec.json.encode(args or {}).decode()
    return shown if len(shown) <= 100 else shown[:97] + "..."
