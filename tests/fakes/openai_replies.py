"""The scripted replies of the fake OpenAI server, and how each streams as Responses API SSE.

``SseWriter`` writes one streamed response: ``response.created`` and ``response.in_progress``,
then per output item ``response.output_item.added``, its deltas (text, reasoning summary,
function-call arguments, custom tool input) and ``response.output_item.done``, then
``response.completed`` with usage (or ``response.failed``). Ids are deterministic
(``resp_N``, ``msg_N_I``, ``call_N_I``) so recordings stay stable.
"""

from __future__ import annotations

import json
from typing import Any

import h11
import msgspec
import trio


class _Reply(msgspec.Struct, tag_field="kind", kw_only=True, frozen=True):
    """Usage figures every reply reports in ``response.completed``."""

    input_tokens: int = 100
    output_tokens: int = 10
    cached_tokens: int = 0
    reasoning_tokens: int = 0


class Text(_Reply, tag="text", kw_only=True, frozen=True):
    """An assistant message streamed in ``chunk``-character deltas, ``delay`` seconds apart."""

    text: str
    reasoning: str | None = None
    chunk: int = 12
    delay: float = 0.0


class Exec(_Reply, tag="exec", kw_only=True, frozen=True):
    """Codex's unified-exec tool call: run ``cmd`` (optionally asking to leave the sandbox)."""

    cmd: str
    text: str | None = None
    workdir: str | None = None
    sandbox_permissions: str | None = None
    justification: str | None = None
    yield_time_ms: int | None = None
    call_id: str | None = None


class FunctionCall(_Reply, tag="function_call", kw_only=True, frozen=True):
    """Any JSON function tool call; ``arguments`` is encoded as the API does (a JSON string)."""

    name: str
    arguments: dict[str, Any] = {}
    namespace: str | None = None
    call_id: str | None = None


class CustomCall(_Reply, tag="custom_call", kw_only=True, frozen=True):
    """A freeform (custom) tool call, such as Codex's ``apply_patch`` with a patch as ``input``."""

    name: str
    input: str
    call_id: str | None = None


class RawItem(_Reply, tag="item", kw_only=True, frozen=True):
    """Any output item, streamed as added + done (e.g. Codex's ``tool_search_call``)."""

    item: dict[str, Any]


class Stall(_Reply, tag="stall", kw_only=True, frozen=True):
    """Stream ``text`` (maybe empty), then hold the response open until the client disconnects."""

    text: str = ""


class Failed(_Reply, tag="failed", kw_only=True, frozen=True):
    """A stream that starts, then ends with ``response.failed`` carrying ``code``/``message``."""

    code: str = "server_error"
    message: str = "The server had an error while processing your request."


class HttpError(_Reply, tag="error", kw_only=True, frozen=True):
    """An HTTP error status with OpenAI's JSON error body (``{"error": {message, type, code}}``)."""

    status: int
    message: str | None = None
    type: str | None = None
    code: str | None = None
    retry_after: float | None = None


Reply = Text | Exec | FunctionCall | CustomCall | RawItem | Stall | Failed | HttpError
"""Every scripted reply kind."""

ERROR_DEFAULTS: dict[int, tuple[str, str, str | None]] = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided: sk-test. You can find your API key at "
          "https://platform.openai.com/account/api-keys.", "invalid_request_error",
          "invalid_api_key"),
    403: ("You are not allowed to sample from this model", "invalid_request_error", None),
    404: ("The model `gpt-fake` does not exist or you do not have access to it.",
          "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for gpt-fake on tokens per min (TPM): Limit 30000, Used 30000, "
          "Requested 100. Please try again in 20ms.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!",
          "server_error", None),
    503: ("The engine is currently overloaded, please try again later", "server_error", None),
}


class SseWriter:
    """Writes one streamed response: the event sequence and item shapes of the Responses API."""

    def __init__(self, stream: trio.SocketStream, conn: h11.Connection, response_id: str,
                 model: str) -> None:
        self.stream, self.conn, self.id, self.model = stream, conn, response_id, model
        self.output: list[dict[str, Any]] = []
        self.seq = 0

    def _response(self, status: str, **extra: Any) -> dict[str, Any]:
        return {"id": self.id, "object": "response", "created_at": 0, "status": status,
                "model": self.model, "output": list(self.output), **extra}

    async def event(self, kind: str, **fields: Any) -> None:
        payload = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        data = f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode()
        await self.stream.send_all(self.conn.send(h11.Data(data=data)))

    async def begin(self) -> None:
        await self.event("response.created", response=self._response("in_progress"))
        await self.event("response.in_progress", response=self._response("in_progress"))

    def _item_id(self, prefix: str) -> str:
        return f"{prefix}_{self.id.removeprefix('resp_')}_{len(self.output)}"

    async def reasoning(self, text: str) -> None:
        index, item_id = len(self.output), self._item_id("rs")
        item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
        await self.event("response.output_item.added", output_index=index, item=item)
        part = {"type": "summary_text", "text": ""}
        common = {"item_id": item_id, "output_index": index, "summary_index": 0}
        await self.event("response.reasoning_summary_part.added", part=part, **common)
        await self.event("response.reasoning_summary_text.delta", delta=text, **common)
        await self.event("response.reasoning_summary_text.done", text=text, **common)
        done_part = {"type": "summary_text", "text": text}
        await self.event("response.reasoning_summary_part.done", part=done_part, **common)
        done = {**item, "summary": [done_part], "encrypted_content": None}
        await self.event("response.output_item.done", output_index=index, item=done)
        self.output.append(done)

    async def message(self, text: str, chunk: int, delay: float) -> None:
        index, item_id = len(self.output), self._item_id("msg")
        item: dict[str, Any] = {"id": item_id, "type": "message", "status": "in_progress",
                                "role": "assistant", "content": []}
        await self.event("response.output_item.added", output_index=index, item=item)
        common = {"item_id": item_id, "output_index": index, "content_index": 0}
        empty = {"type": "output_text", "text": "", "annotations": []}
        await self.event("response.content_part.added", part=empty, **common)
        step = chunk if chunk > 0 else max(len(text), 1)
        for start in range(0, len(text), step):
            if delay > 0 and start > 0:
                await trio.sleep(delay)
            await self.event("response.output_text.delta", delta=text[start:start + step],
                             logprobs=[], **common)
        await self.event("response.output_text.done", text=text, logprobs=[], **common)
        part = {"type": "output_text", "text": text, "annotations": []}
        await self.event("response.content_part.done", part=part, **common)
        done = {**item, "status": "completed", "content": [part]}
        await self.event("response.output_item.done", output_index=index, item=done)
        self.output.append(done)

    async def function_call(self, name: str, arguments: dict[str, Any], call_id: str | None,
                            namespace: str | None) -> None:
        index, item_id = len(self.output), self._item_id("fc")
        call_id = call_id or self._item_id("call")
        encoded = json.dumps(arguments)
        item: dict[str, Any] = {"id": item_id, "type": "function_call", "status": "in_progress",
                                "call_id": call_id, "name": name, "arguments": ""}
        if namespace is not None:
            item["namespace"] = namespace
        await self.event("response.output_item.added", output_index=index, item=item)
        common = {"item_id": item_id, "output_index": index}
        await self.event("response.function_call_arguments.delta", delta=encoded, **common)
        await self.event("response.function_call_arguments.done", arguments=encoded, **common)
        done = {**item, "status": "completed", "arguments": encoded}
        await self.event("response.output_item.done", output_index=index, item=done)
        self.output.append(done)

    async def custom_call(self, name: str, text: str, call_id: str | None) -> None:
        index, item_id = len(self.output), self._item_id("ctc")
        call_id = call_id or self._item_id("call")
        item: dict[str, Any] = {"id": item_id, "type": "custom_tool_call", "status": "in_progress",
                                "call_id": call_id, "name": name, "input": ""}
        await self.event("response.output_item.added", output_index=index, item=item)
        common = {"item_id": item_id, "output_index": index}
        await self.event("response.custom_tool_call_input.delta", delta=text, **common)
        await self.event("response.custom_tool_call_input.done", input=text, **common)
        done = {**item, "status": "completed", "input": text}
        await self.event("response.output_item.done", output_index=index, item=done)
        self.output.append(done)

    async def raw_item(self, item: dict[str, Any]) -> None:
        index = len(self.output)
        await self.event("response.output_item.added", output_index=index,
                         item={**item, "status": "in_progress"})
        await self.event("response.output_item.done", output_index=index, item=item)
        self.output.append(item)

    async def failed(self, code: str, message: str) -> None:
        await self.event("response.failed", response=self._response(
            "failed", error={"code": code, "message": message}, usage=None))

    async def completed(self, reply: Reply) -> None:
        usage = {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
        await self.event("response.completed", response=self._response("completed", usage=usage))
