"""The fork server's warm-up: one scripted two-call turn per provider, before the first fork.

Importing is not all a first turn costs. ADK imports its flows on the first invocation, and the
SDKs build pydantic validators for their stream events on the first response (the openai SDK
alone builds tens of megabytes of them). A worker forked from a template that only imported
would build all that itself: ~100 MB of private memory after one turn instead of ~30. So the
template runs, once, for each provider kind, a real ``Worker`` turn against a loopback server
(asyncio, in the same loop: no thread) that answers the first request with a call of the ``ls``
tool and the second with a short text, each in its API's streaming wire format. Everything the
turn builds stays in the template, shared copy-on-write by every worker.

The warm-up is an optimisation: a kind whose turn fails is reported on stderr and skipped.
``warm_up`` returns the kinds whose turn ended well. It runs in a temporary directory (the
workspace and the store), removed afterwards, and leaves no thread and no open connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from protocol.events import Error, Event, Init, Result
from protocol.models import Permissions
from protocol.native import Prompt, ProviderKind, ProviderSettings, Start
from protocol.native_context import ContextSettings

from ..providers import KINDS

__all__ = ["KINDS", "warm_up"]

_TURN_TIMEOUT = 30.0
_MAX_HEAD = 64 * 1024


def warm_up() -> list[str]:
    """Run the warm-up turns (blocking: its own event loop); the kinds that went well."""
    with tempfile.TemporaryDirectory(prefix="corral-warm-up-") as tmp:
        return asyncio.run(_warm_up(Path(tmp)))


async def _warm_up(root: Path) -> list[str]:
    (root / "work").mkdir()
    (root / "work" / "README").write_text("warm-up\n")
    wire = _Wire()
    server = await asyncio.start_server(wire.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    done: list[str] = []
    try:
        for kind in KINDS:
            try:
                async with asyncio.timeout(_TURN_TIMEOUT):
                    problem = await _turn(root, kind, port)
            except TimeoutError:
                problem = "timed out"
            if problem is None:
                done.append(kind)
            else:
                print(f"fork server warm-up: {kind}: {problem}", file=sys.stderr, flush=True)
    finally:
        server.close()
        await server.wait_closed()
    return done


async def _turn(root: Path, kind: ProviderKind, port: int) -> str | None:
    """One turn of a real worker on ``kind``; what went wrong, or ``None``."""
    from actors.native.worker.handler import StartFailed, Worker

    events: list[Event] = []
    changed = asyncio.Event()

    def emit(event: Event) -> None:
        events.append(event)
        changed.set()

    async def until(kind_: type) -> Event:
        while True:
            for event in events:
                if isinstance(event, kind_):
                    return event
            changed.clear()
            await changed.wait()

    base = f"http://127.0.0.1:{port}" + ("/v1" if kind.startswith("openai") else "")
    provider = ProviderSettings(kind=kind, provider=kind, model="warm-up", base_url=base,
                                api_key="warm-up", max_retries=0)
    worker = Worker(emit)
    try:
        await worker.handle(Start(cwd=str(root / "work"), model=f"{kind}/warm-up",
                                  provider=provider, permissions=Permissions(mode="auto"),
                                  store_dir=str(root / "store" / kind),
                                  # the user's instruction files and skills are not warm-up's
                                  context=ContextSettings(instructions=False,
                                                          foreign_skills=False)))
        await until(Init)
        await worker.handle(Prompt(text="warm up"))
        result = await until(Result)
    except StartFailed:
        result = None
    finally:
        await worker.shutdown()
    errors = [e.message for e in events if isinstance(e, Error)]
    if not isinstance(result, Result) or result.is_error or errors:
        return "; ".join(errors) or "the turn failed"
    return None


class _Wire:
    """The loopback model server: per API, first a call of ``ls``, then a text (alternating)."""

    def __init__(self) -> None:
        self._seen: Counter[str] = Counter()
        self._ids = itertools.count(1)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, ValueError, asyncio.IncompleteReadError):
            head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > _MAX_HEAD:
                return
            request_line, *lines = head.decode("latin-1").split("\r\n")
            path = request_line.split(" ")[1] if " " in request_line else ""
            headers = dict(line.lower().split(": ", 1) for line in lines if ": " in line)
            await reader.readexactly(int(headers.get("content-length", "0")))
            api = _api(path)
            if api is None:
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                             b"Connection: close\r\n\r\n")
            else:
                calls = self._seen[api] % 2 == 0
                self._seen[api] += 1
                body = _render(api, calls, next(self._ids))
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
            await writer.drain()
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def _api(path: str) -> str | None:
    path = path.split("?", 1)[0]
    for suffix, api in (("/responses", "openai"), ("/chat/completions", "openai-chat"),
                        ("/messages", "anthropic"), (":streamGenerateContent", "gemini")):
        if path.endswith(suffix):
            return api
    return None


def _render(api: str, calls: bool, n: int) -> bytes:
    """One response of ``api``: a call of ``ls`` (``calls``) or a short text, streamed."""
    if api == "openai":
        return _responses(calls, n)
    if api == "openai-chat":
        return _chat(calls, n)
    if api == "anthropic":
        return _messages(calls, n)
    return _gemini(calls, n)


def _sse(events: Sequence[tuple[str | None, Any]], sep: str = "\n\n") -> bytes:
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        out.append((f"event: {name}\n" if name else "") + f"data: {text}{sep}")
    return "".join(out).encode()


def _responses(calls: bool, n: int) -> bytes:
    seq = itertools.count()
    if calls:
        item: dict[str, Any] = {"id": f"fc_{n}", "type": "function_call", "status": "completed",
                                "call_id": f"call_{n}", "name": "ls", "arguments": "{}"}
    else:
        item = {"id": f"msg_{n}", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}]}

    def response(status: str, output: list[Any], **extra: Any) -> dict[str, Any]:
        return {"id": f"resp_{n}", "object": "response", "created_at": 0, "status": status,
                "model": "warm-up", "output": output, **extra}

    def event(kind: str, **fields: Any) -> tuple[str, Any]:
        return kind, {"type": kind, "sequence_number": next(seq), **fields}

    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 12}
    events = [event("response.created", response=response("in_progress", []))]
    if not calls:
        ids = {"item_id": f"msg_{n}", "output_index": 0, "content_index": 0}
        events.append(event("response.output_text.delta", delta="ok", logprobs=[], **ids))
    events += [event("response.output_item.done", output_index=0, item=item),
               event("response.completed", response=response("completed", [item], usage=usage))]
    return _sse(events)


def _chat(calls: bool, n: int) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, Any]:
        return None, {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0,
                      "model": "warm-up",
                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    if calls:
        body = [chunk({"role": "assistant", "tool_calls": [
            {"index": 0, "id": f"call_{n}", "type": "function",
             "function": {"name": "ls", "arguments": "{}"}}]}), chunk({}, "tool_calls")]
    else:
        body = [chunk({"role": "assistant", "content": "ok"}), chunk({}, "stop")]
    usage = (None, {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0,
                    "model": "warm-up", "choices": [],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})
    return _sse([*body, usage, (None, "[DONE]")])


def _messages(calls: bool, n: int) -> bytes:
    usage = {"input_tokens": 10, "output_tokens": 2}
    if calls:
        block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_{n}", "name": "ls",
                                 "input": {}}
        delta: dict[str, Any] = {"type": "input_json_delta", "partial_json": "{}"}
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": "ok"}
    return _sse([
        ("message_start", {"type": "message_start", "message": {
            "id": f"msg_{n}", "type": "message", "role": "assistant", "model": "warm-up",
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "usage": usage, "delta": {
            "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def _gemini(calls: bool, n: int) -> bytes:
    part = {"functionCall": {"name": "ls", "args": {}}} if calls else {"text": "ok"}
    return _sse([(None, {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0,
                        "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2,
                          "totalTokenCount": 12},
        "modelVersion": "warm-up", "responseId": f"gem_{n}"})], sep="\r\n\r\n")
