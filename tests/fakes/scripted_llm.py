"""An in-process fake ADK model that plays the neutral model script, for worker-loop tests.

``ScriptedLlm`` is a real ``BaseLlm``: give it to an ``LlmAgent`` and each model call takes the
next step of its script (``tests.fakes.model_script``: ``say``, ``call``, ``fail``, ``hang``),
or an exception instance to raise as is. It answers exactly as corral's adapters do (it builds
its responses with their ``TurnBuilder``): thought and text deltas as ``partial`` responses when
streaming, then one final response with the parts, tool calls (ids ``call_<n>_<i>``), finish
reason and usage (``usage_of`` reads it). A ``Fail`` raises the ``ModelError`` the adapters
raise for that HTTP status, without retrying. A hanging turn yields its first delta and waits
until ``release()`` or until the consuming task is cancelled (counted in ``cancelled``).

Every call is recorded in ``requests`` (the request with its contents deep-copied at call time),
so a test asserts that call 2 carries the tool call and its result::

    llm = ScriptedLlm([call("write", path="a.txt", content="hi"), say("done")])
    agent = LlmAgent(name="t", model=llm, tools=[...])
    ...
    assert llm.requests[1].contents[-1].parts[0].function_response.name == "write"
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Iterable
from typing import Any

from google.adk.models import LlmCapabilities
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import PrivateAttr

# The adapters' own builder, so that the fake's responses have their exact shape.
from actors.native.models._assembly import TurnBuilder
from actors.native.models.errors import error_for_status
from protocol.events import Usage
from tests.fakes.model_script import Fail, Step, say

__all__ = ["ScriptedLlm"]

Scripted = Step | BaseException


class ScriptedLlm(BaseLlm):
    """The fake model; see the module docstring."""

    model: str = "scripted"
    _steps: deque[Scripted] = PrivateAttr(default_factory=deque)
    _default: Scripted = PrivateAttr(default_factory=lambda: say("ok"))
    _requests: list[LlmRequest] = PrivateAttr(default_factory=list)
    _release: asyncio.Event | None = PrivateAttr(default=None)
    _cancelled: int = PrivateAttr(default=0)

    def __init__(self, steps: Iterable[Scripted] = (), *, default: Scripted | None = None,
                 **fields: Any) -> None:
        super().__init__(**fields)
        self._steps = deque(steps)
        if default is not None:
            self._default = default

    @property
    def capabilities(self) -> LlmCapabilities:
        return LlmCapabilities(output_schema_and_tools=False)

    @property
    def requests(self) -> list[LlmRequest]:
        """Every request received, in order."""
        return self._requests

    @property
    def cancelled(self) -> int:
        """How many calls were cancelled while their answer was streaming."""
        return self._cancelled

    def add(self, *steps: Scripted) -> None:
        """Queue steps for the next calls, in order."""
        self._steps.extend(steps)

    def release(self) -> None:
        """Let a hanging turn finish (call from the loop that runs the model)."""
        if self._release is not None:
            self._release.set()

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """Play the next step (see the module docstring)."""
        self._requests.append(llm_request.model_copy(
            update={"contents": [c.model_copy(deep=True) for c in llm_request.contents]}))
        n = len(self._requests)
        step = self._steps.popleft() if self._steps else self._default
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, Fail):
            raise error_for_status(step.status, step.message or f"fake error {step.status}",
                                   code=step.code, retry_after=step.retry_after)
        turn = TurnBuilder(self.model)
        held = not step.hang
        if step.hang:
            self._release = asyncio.Event()  # before the first delta: release() may follow it
        for kind, text in (("thought", step.thought), ("text", step.text)):
            for start in range(0, len(text), max(step.chunk, 1)):
                piece = text[start:start + max(step.chunk, 1)]
                partial = turn.thought(piece) if kind == "thought" else turn.text(piece)
                if stream and partial is not None:
                    yield partial
                if not held:
                    held = True
                    await self._hold()
        if not held:  # nothing streamed: hold before the answer instead
            await self._hold()
        for index, spec in enumerate(step.calls):
            turn.call(spec.id or f"call_{n}_{index}", spec.name, dict(spec.args))
        turn.usage = Usage(input_tokens=step.input_tokens, output_tokens=step.output_tokens,
                           cache_read_tokens=step.cache_read_tokens,
                           cache_write_tokens=step.cache_write_tokens)
        turn.reasoning_tokens = step.reasoning_tokens
        if step.stop == "max_tokens":
            turn.finish_reason = types.FinishReason.MAX_TOKENS
        yield turn.final()

    async def _hold(self) -> None:
        if self._release is None:
            return
        try:
            await self._release.wait()
        except asyncio.CancelledError:
            self._cancelled += 1
            raise
        finally:
            self._release = None
