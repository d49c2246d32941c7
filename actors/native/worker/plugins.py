"""Python plugins of native sessions: ADK plugins from the entry-point group ``corral.native_plugins``.

Each entry point names a ``BasePlugin`` subclass, an instance, or a callable returning one or a
list of them; the worker loads them at ``start`` and every app of the session (its own and its
subagents') runs them. Corral forwards the four callbacks plugins are for: before/after model
and before/after tool. A plugin must not take a session down: an entry point that fails to load
is an ``error`` event ``native.plugin.load_failed`` (the plugin is left out), and a callback that
raises is ``native.plugin.failed`` and counts as having returned ``None`` (the turn goes on).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib.metadata import entry_points
from typing import Any, TypeVar

from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from protocol.events import Error, Event

__all__ = ["GROUP", "GuardedPlugin", "load_plugins"]

GROUP = "corral.native_plugins"

T = TypeVar("T")


def load_plugins(emit: Callable[[Event], None]) -> list[BasePlugin]:
    """The plugins of every entry point of ``GROUP``, each guarded (see the module docstring)."""
    out: list[BasePlugin] = []
    names: set[str] = set()
    for point in entry_points(group=GROUP):
        try:
            made = point.load()
            if callable(made) and not isinstance(made, BasePlugin):
                made = made()
            plugins = made if isinstance(made, list) else [made]
            bad = [p for p in plugins if not isinstance(p, BasePlugin)]
            if bad:
                raise TypeError(f"{type(bad[0]).__name__} is not an ADK BasePlugin")
        except Exception as exc:  # a plugin's import or factory failed: leave it out
            emit(Error(code="native.plugin.load_failed", error_class="unknown",
                       message=f"plugin {point.name} ({point.value}) was not loaded: "
                               f"{type(exc).__name__}: {exc}"))
            continue
        for plugin in plugins:
            if plugin.name in names:
                emit(Error(code="native.plugin.load_failed", error_class="unknown",
                           message=f"plugin {point.name}: a plugin named {plugin.name} is "
                                   "already loaded; this one is left out"))
                continue
            names.add(plugin.name)
            out.append(GuardedPlugin(plugin, emit))
    return out


class GuardedPlugin(BasePlugin):
    """Forwards the model and tool callbacks to a plugin; its exceptions become warnings."""

    def __init__(self, inner: BasePlugin, emit: Callable[[Event], None]) -> None:
        super().__init__(name=inner.name)
        self._inner = inner
        self._emit = emit

    async def before_model_callback(self, *, callback_context: CallbackContext,
                                    llm_request: LlmRequest) -> LlmResponse | None:
        return await self._guard("before_model", lambda: self._inner.before_model_callback(
            callback_context=callback_context, llm_request=llm_request))

    async def after_model_callback(self, *, callback_context: CallbackContext,
                                   llm_response: LlmResponse) -> LlmResponse | None:
        return await self._guard("after_model", lambda: self._inner.after_model_callback(
            callback_context=callback_context, llm_response=llm_response))

    async def before_tool_callback(self, *, tool: BaseTool, tool_args: dict[str, Any],
                                   tool_context: ToolContext) -> dict[str, Any] | None:
        return await self._guard("before_tool", lambda: self._inner.before_tool_callback(
            tool=tool, tool_args=tool_args, tool_context=tool_context))

    async def after_tool_callback(self, *, tool: BaseTool, tool_args: dict[str, Any],
                                  tool_context: ToolContext,
                                  result: dict[str, Any]) -> dict[str, Any] | None:
        return await self._guard("after_tool", lambda: self._inner.after_tool_callback(
            tool=tool, tool_args=tool_args, tool_context=tool_context, result=result))

    async def _guard(self, hook: str, call: Callable[[], Awaitable[T | None]]) -> T | None:
        try:
            return await call()
        except Exception as exc:  # the plugin's bug: a warning, and the call goes on
            self._emit(Error(code="native.plugin.failed", error_class="unknown",
                             message=f"plugin {self.name} failed in {hook}: "
                                     f"{type(exc).__name__}: {exc}"))
            return None
