"""The ADK pieces of one native session: coding tools as ADK tools, a switchable model, the agent.

``CodingTool`` wraps one entry of ``actors.native.tools.TOOLS``; a successful ``write`` or
``edit`` is followed by ``after_edit`` (the daemon's diagnostics of the changed file, appended
to the result). When the session's ``AskRules`` say a tool asks (``confirm``, shared with the MCP
tools), it uses ADK's tool confirmation: the first call records
``tool_context.request_confirmation()`` and answers the model with ``NOT_RUN`` (a placeholder the
model only ever sees if the turn ends before anyone answers); ADK then pauses the invocation
(the app is resumable) and the worker resumes it with the user's ``ToolConfirmation``: confirmed
→ the tool runs, refused → the model reads ``REFUSED``. Every result is ``{"output": text}`` or
``{"error": text}``; the adapters send the text alone.

``SwitchableLlm`` is the agent's model: it forwards each call to the model currently in its
``ModelSlot``, so ``set_model`` takes effect at the next model call even inside a running
invocation (ADK may copy the agent, never the slot it shares).
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.apps import App, ResumabilityConfig
from google.adk.models._capabilities import LlmCapabilities
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import PrivateAttr

from actors.native.worker.askrules import AskRules
from actors.native.tools import ToolSpec, Workspace, call_tool

__all__ = ["APP_NAME", "AfterEdit", "AfterTool", "BeforeModel", "BeforeTool", "MODEL_KEY",
           "NOT_RUN", "REFUSED", "USER_ID", "CodingTool", "ModelSlot", "SwitchableLlm", "build_app",
           "confirm"]

APP_NAME = "corral"
USER_ID = "corral"

MODEL_KEY = "corral_model"
"""``custom_metadata`` key of a final model response: the ``PROVIDER/NAME`` that answered."""

NOT_RUN = ("This call did not run: it needs the user's approval, and the turn ended before "
           "the user answered.")
REFUSED = "The user refused to let this call run. Do not retry it unless the user asks you to."

BeforeModel = Callable[[CallbackContext, LlmRequest], Awaitable[LlmResponse | None]]
BeforeTool = Callable[[BaseTool, dict[str, Any], ToolContext], Awaitable[dict[str, Any] | None]]
AfterTool = Callable[[BaseTool, dict[str, Any], ToolContext, dict[str, Any]],
                     Awaitable[dict[str, Any] | None]]
AfterEdit = Callable[[str, str | None], Awaitable[str]]
"""``(path, text written or None) -> text`` appended to a successful write/edit result."""
AfterModel = Callable[[CallbackContext, LlmResponse], Awaitable[LlmResponse | None]]


class CodingTool(BaseTool):
    """One coding tool as an ADK tool (see the module docstring)."""

    def __init__(self, spec: ToolSpec, workspace: Workspace, ask_rules: AskRules,
                 after_edit: AfterEdit | None = None) -> None:
        super().__init__(name=spec.name, description=spec.description)
        self.spec = spec
        self._workspace = workspace
        self._ask_rules = ask_rules
        self._after_edit = after_edit

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(name=self.name, description=self.description,
                                         parameters_json_schema=self.spec.schema)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Ask first if the ask rules say so; then run the tool (cancellation kills what it runs).
        A successful ``write``/``edit`` is followed by the changed file's diagnostics."""
        refused = confirm(self._ask_rules, self.name, tool_context)
        if refused is not None:
            return refused
        outcome = await call_tool(self._workspace, self.name, args)
        if outcome.is_error:
            return {"error": outcome.text}
        text = outcome.text
        if self._after_edit is not None and self.spec.kind == "edit" and outcome.path:
            written = args.get("content") if self.name == "write" else None
            block = await self._after_edit(outcome.path, written if isinstance(written, str) else None)
            if block:
                text = f"{text}\n\n{block}"
        return {"output": text}


def confirm(ask_rules: AskRules, name: str, tool_context: ToolContext) -> dict[str, str] | None:
    """``None`` when tool ``name`` may run now; else the result to give the model: ``NOT_RUN``
    after asking for confirmation (the invocation pauses), ``REFUSED`` after a refusal."""
    if not ask_rules.asks(name):
        return None
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(hint=f"Allow {name}?")
        return {"error": NOT_RUN}
    if not confirmation.confirmed:
        return {"error": REFUSED}
    return None


class ModelSlot:
    """The model a session calls now, and its ``PROVIDER/NAME``; shared by every copy."""

    def __init__(self, llm: BaseLlm, spec: str) -> None:
        self.llm = llm
        self.spec = spec

    @property
    def name(self) -> str:
        """The model NAME (after the provider), as prices are keyed."""
        return self.spec.partition("/")[2]


class SwitchableLlm(BaseLlm):
    """Forwards every call to ``slot.llm`` as it is when the call starts, and stamps the final
    response with that model's ``PROVIDER/NAME`` (``MODEL_KEY``) for the turn's accounting."""

    _slot: ModelSlot = PrivateAttr()

    def __init__(self, slot: ModelSlot) -> None:
        super().__init__(model=slot.spec)
        self._slot = slot

    @property
    def capabilities(self) -> LlmCapabilities:
        """The current model's."""
        return self._slot.llm.capabilities

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        """One call of the current model."""
        llm, spec = self._slot.llm, self._slot.spec
        async for response in llm.generate_content_async(llm_request, stream):
            if not response.partial:
                response.custom_metadata = {**(response.custom_metadata or {}), MODEL_KEY: spec}
            yield response


def build_app(slot: ModelSlot, tools: list[BaseTool | BaseToolset], *,
              instruction: Callable[[Any], str], before_model: list[BeforeModel], thinking: bool,
              before_tool: BeforeTool | None = None, after_tool: AfterTool | None = None,
              after_model: AfterModel | None = None,
              plugins: list[BasePlugin] | None = None) -> App:
    """The resumable ADK app around one ``LlmAgent`` (resumable: confirmations pause it).

    ``instruction`` is a provider function so that ADK does not expand ``{…}`` in it; ADK calls
    it for every model call. The callbacks run in order (``worker.depth`` has the tool ones)."""
    config = None
    if thinking:
        config = types.GenerateContentConfig(
            thinking_config=types.ThinkingConfig(include_thoughts=True))
    agent = LlmAgent(name="corral", model=SwitchableLlm(slot), instruction=instruction,
                     tools=list(tools), generate_content_config=config,
                     before_model_callback=list(before_model), before_tool_callback=before_tool,
                     after_tool_callback=after_tool, after_model_callback=after_model,
                     on_tool_error_callback=_tool_error)
    with warnings.catch_warnings():
        # Resumability is marked experimental; it is what makes a confirmation pause the run.
        warnings.filterwarnings("ignore", message=r".*ResumabilityConfig", category=UserWarning)
        resumable = ResumabilityConfig(is_resumable=True)
    return App(name=APP_NAME, root_agent=agent, resumability_config=resumable,
               plugins=list(plugins or []))


async def _tool_error(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext,
                      error: Exception) -> dict[str, Any]:
    """A call of a tool that does not exist (or that raised) is an error result, not a crash."""
    return {"error": f"{tool.name}: {error}"}
