"""How one neutral ``Turn`` looks on the wire of each model API (pure: steps in, bytes out).

Theory of operation: every renderer turns a ``Turn`` into a list of ``Frame``s, one per
server-sent event, in the order the real API sends them; a frame is flagged ``delta`` when it
carries streamed text or thought, which is where the server may stop and hang. Errors are
rendered as ``(status, headers, JSON body)`` in each API's own error shape. Nothing here does
I/O, so the shapes can be checked byte by byte and the server stays a small loop.

The APIs (as their official SDKs parse them):

* ``openai``: Responses API events (``response.created`` … ``response.output_text.delta`` …
  ``response.completed`` with ``usage.input_tokens_details.cached_tokens``).
* ``openai-chat``: ``chat.completion.chunk`` objects, tool calls as indexed argument fragments,
  reasoning as ``delta.reasoning_content`` (vLLM, DeepSeek), a last chunk with no choices and
  ``usage`` (what ``stream_options.include_usage`` asks for), then ``data: [DONE]``.
* ``anthropic``: Messages API events (``message_start`` … ``content_block_delta`` …
  ``message_delta`` with ``stop_reason`` and usage, ``message_stop``).
* ``gemini``: ``GenerateContentResponse`` chunks (``data: {...}`` separated by CRLF CRLF), the
  last with ``finishReason`` and ``usageMetadata``.

``body`` is the non-streaming form of each (a request without ``stream: true``; Gemini's
``:generateContent``): the whole answer in one JSON object.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import msgspec

from tests.fakes.model_script import Fail, Turn

Api = Literal["openai", "openai-chat", "anthropic", "gemini"]


class Frame(msgspec.Struct, frozen=True):
    """One server-sent event as bytes; ``delta`` marks streamed text or thought."""

    data: bytes
    delta: bool = False


def render(api: Api, turn: Turn, *, model: str, n: int) -> list[Frame]:
    """The frames of ``turn`` as the ``n``-th response of ``api`` (``n`` makes ids unique)."""
    match api:
        case "openai":
            frames = _responses(turn, model, n)
        case "openai-chat":
            frames = _chat(turn, model, n)
        case "anthropic":
            frames = _anthropic(turn, model, n)
        case "gemini":
            frames = _gemini(turn, model, n)
    if turn.error is None:
        return frames
    last = max((i for i, f in enumerate(frames) if f.delta), default=0)
    return [*frames[:last + 1], _stream_error(api, turn.error, n)]


_STREAM_ERRORS = {  # neutral kind: (OpenAI code, Anthropic type, HTTP status for Gemini)
    "overloaded": ("server_is_overloaded", "overloaded_error", 503),
    "rate_limit": ("rate_limit_exceeded", "rate_limit_error", 429),
    "server_error": ("server_error", "api_error", 500),
}


def _stream_error(api: Api, kind: str, n: int) -> Frame:
    """The in-stream error event that ends a response which already began."""
    code, kind_type, status = _STREAM_ERRORS[kind]
    message = f"fake in-stream {kind}"
    if api == "openai":
        return _event("response.failed", {"type": "response.failed", "sequence_number": 999,
                                          "response": {"id": f"resp_{n}", "object": "response",
                                                       "created_at": 0, "status": "failed",
                                                       "output": [], "model": "m",
                                                       "error": {"code": code,
                                                                 "message": message}}})
    if api == "openai-chat":
        return _data({"error": {"message": message, "type": code, "code": code}})
    if api == "anthropic":
        return _event("error", {"type": "error", "error": {"type": kind_type,
                                                          "message": message}})
    return _data({"error": {"code": status, "message": message,
                            "status": _GOOGLE_STATUS.get(status, "UNKNOWN")}}, sep="\r\n\r\n")


def call_ids(turn: Turn, n: int) -> list[str]:
    """The ids the calls of ``turn`` carry on the wire."""
    return [c.id or f"call_{n}_{i}" for i, c in enumerate(turn.calls)]


def _pieces(text: str, size: int) -> list[str]:
    size = max(size, 1)
    return [text[i:i + size] for i in range(0, len(text), size)]


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _event(name: str, data: dict[str, Any], delta: bool = False) -> Frame:
    return Frame(f"event: {name}\ndata: {_dump(data)}\n\n".encode(), delta)


def _data(data: Any, delta: bool = False, sep: str = "\n\n") -> Frame:
    return Frame(f"data: {_dump(data)}{sep}".encode(), delta)


# -- OpenAI Responses -------------------------------------------------------------------------

def _responses(turn: Turn, model: str, n: int) -> list[Frame]:
    rid, out, frames = f"resp_{n}", [], []
    seq = iter(range(1_000_000))

    def ev(kind: str, streamed: bool = False, **fields: Any) -> None:
        frames.append(_event(kind, {"type": kind, "sequence_number": next(seq), **fields},
                             streamed))

    def response(status: str, **extra: Any) -> dict[str, Any]:
        return {"id": rid, "object": "response", "created_at": 0, "status": status,
                "model": model, "output": list(out), **extra}

    ev("response.created", response=response("in_progress"))
    ev("response.in_progress", response=response("in_progress"))
    if turn.thought:
        index, iid = len(out), f"rs_{n}_{len(out)}"
        ids = {"item_id": iid, "output_index": index, "summary_index": 0}
        ev("response.output_item.added", output_index=index,
           item={"id": iid, "type": "reasoning", "summary": []})
        ev("response.reasoning_summary_part.added", part={"type": "summary_text", "text": ""}, **ids)
        for piece in _pieces(turn.thought, turn.chunk):
            ev("response.reasoning_summary_text.delta", True, delta=piece, **ids)
        ev("response.reasoning_summary_text.done", text=turn.thought, **ids)
        part = {"type": "summary_text", "text": turn.thought}
        ev("response.reasoning_summary_part.done", part=part, **ids)
        item = {"id": iid, "type": "reasoning", "summary": [part]}
        ev("response.output_item.done", output_index=index, item=item)
        out.append(item)
    if turn.text:
        index, iid = len(out), f"msg_{n}_{len(out)}"
        ids = {"item_id": iid, "output_index": index, "content_index": 0}
        item = {"id": iid, "type": "message", "status": "in_progress", "role": "assistant",
                "content": []}
        ev("response.output_item.added", output_index=index, item=item)
        ev("response.content_part.added", part={"type": "output_text", "text": "",
                                                "annotations": []}, **ids)
        for piece in _pieces(turn.text, turn.chunk):
            ev("response.output_text.delta", True, delta=piece, logprobs=[], **ids)
        ev("response.output_text.done", text=turn.text, logprobs=[], **ids)
        part = {"type": "output_text", "text": turn.text, "annotations": []}
        ev("response.content_part.done", part=part, **ids)
        done = {**item, "status": "completed", "content": [part]}
        ev("response.output_item.done", output_index=index, item=done)
        out.append(done)
    for c, call_id in zip(turn.calls, call_ids(turn, n)):
        if c.input is not None:
            index, iid = len(out), f"ctc_{n}_{len(out)}"
            item = {"id": iid, "type": "custom_tool_call", "status": "in_progress",
                    "call_id": call_id, "name": c.name, "input": ""}
            ev("response.output_item.added", output_index=index, item=item)
            ev("response.custom_tool_call_input.delta", item_id=iid, output_index=index,
               delta=c.input)
            ev("response.custom_tool_call_input.done", item_id=iid, output_index=index,
               input=c.input)
            done = {**item, "status": "completed", "input": c.input}
            ev("response.output_item.done", output_index=index, item=done)
            out.append(done)
            continue
        index, iid = len(out), f"fc_{n}_{len(out)}"
        args = _dump(c.args)
        item = {"id": iid, "type": "function_call", "status": "in_progress", "call_id": call_id,
                "name": c.name, "arguments": ""}
        ev("response.output_item.added", output_index=index, item=item)
        for piece in _pieces(args, 7):
            ev("response.function_call_arguments.delta", item_id=iid, output_index=index,
               delta=piece)
        ev("response.function_call_arguments.done", item_id=iid, output_index=index,
           arguments=args)
        done = {**item, "status": "completed", "arguments": args}
        ev("response.output_item.done", output_index=index, item=done)
        out.append(done)
    usage = {"input_tokens": turn.input_tokens + turn.cache_read_tokens + turn.cache_write_tokens,
             "input_tokens_details": {"cached_tokens": turn.cache_read_tokens},
             "output_tokens": turn.output_tokens,
             "output_tokens_details": {"reasoning_tokens": turn.reasoning_tokens},
             "total_tokens": 0}
    if turn.stop == "max_tokens":
        ev("response.incomplete", response=response(
            "incomplete", usage=usage, incomplete_details={"reason": "max_output_tokens"}))
    else:
        ev("response.completed", response=response("completed", usage=usage))
    return frames


# -- OpenAI Chat Completions ------------------------------------------------------------------

def _chat(turn: Turn, model: str, n: int) -> list[Frame]:
    frames: list[Frame] = []

    def chunk(delta: dict[str, Any], finish: str | None = None, is_delta: bool = False) -> None:
        frames.append(_data({"id": f"chatcmpl-{n}", "object": "chat.completion.chunk",
                             "created": 0, "model": model, "choices": [
                                 {"index": 0, "delta": delta, "finish_reason": finish}]},
                            is_delta))

    chunk({"role": "assistant", "content": ""})
    for piece in _pieces(turn.thought, turn.chunk):
        chunk({"reasoning_content": piece}, is_delta=True)
    for piece in _pieces(turn.text, turn.chunk):
        chunk({"content": piece}, is_delta=True)
    for index, (c, call_id) in enumerate(zip(turn.calls, call_ids(turn, n))):
        chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                               "function": {"name": c.name, "arguments": ""}}]})
        for piece in _pieces(_dump(c.args), 7):
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    finish = "length" if turn.stop == "max_tokens" else "tool_calls" if turn.calls else "stop"
    chunk({}, finish)
    prompt = turn.input_tokens + turn.cache_read_tokens + turn.cache_write_tokens
    frames.append(_data({"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0,
                         "model": model, "choices": [], "usage": {
                             "prompt_tokens": prompt, "completion_tokens": turn.output_tokens,
                             "total_tokens": prompt + turn.output_tokens,
                             "prompt_tokens_details": {"cached_tokens": turn.cache_read_tokens},
                             "completion_tokens_details": {
                                 "reasoning_tokens": turn.reasoning_tokens}}}))
    frames.append(Frame(b"data: [DONE]\n\n"))
    return frames


# -- Anthropic Messages -----------------------------------------------------------------------

def _anthropic(turn: Turn, model: str, n: int) -> list[Frame]:
    usage = {"input_tokens": turn.input_tokens,
             "cache_creation_input_tokens": turn.cache_write_tokens,
             "cache_read_input_tokens": turn.cache_read_tokens, "output_tokens": 1}
    stop = "max_tokens" if turn.stop == "max_tokens" else "tool_use" if turn.calls else "end_turn"
    frames = [
        _event("message_start", {"type": "message_start", "message": {
            "id": f"msg_{n}", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        _event("ping", {"type": "ping"}),
    ]
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]], bool]] = []
    if turn.thought:
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(turn.thought, turn.chunk)]
        deltas.append({"type": "signature_delta", "signature": f"sig_{n}"})
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas, True))
    if turn.text:
        blocks.append(({"type": "text", "text": ""},
                       [{"type": "text_delta", "text": p} for p in _pieces(turn.text, turn.chunk)],
                       True))
    for c, call_id in zip(turn.calls, call_ids(turn, n)):
        blocks.append(({"type": "tool_use", "id": call_id, "name": c.name, "input": {}},
                       [{"type": "input_json_delta", "partial_json": p}
                        for p in _pieces(_dump(c.args), 7)], False))
    for index, (start, deltas, is_delta) in enumerate(blocks):
        frames.append(_event("content_block_start", {"type": "content_block_start",
                                                     "index": index, "content_block": start}))
        for d in deltas:
            frames.append(_event("content_block_delta", {"type": "content_block_delta",
                                                         "index": index, "delta": d},
                                 is_delta and d["type"] != "signature_delta"))
        frames.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    frames.append(_event("message_delta", {
        "type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {**usage, "output_tokens": turn.output_tokens}}))
    frames.append(_event("message_stop", {"type": "message_stop"}))
    return frames


# -- Gemini -----------------------------------------------------------------------------------

def _gemini_usage(turn: Turn) -> dict[str, Any]:
    prompt = turn.input_tokens + turn.cache_read_tokens + turn.cache_write_tokens
    usage = {"promptTokenCount": prompt,
             "candidatesTokenCount": turn.output_tokens - turn.reasoning_tokens,
             "totalTokenCount": prompt + turn.output_tokens}
    if turn.cache_read_tokens:
        usage["cachedContentTokenCount"] = turn.cache_read_tokens
    if turn.reasoning_tokens:
        usage["thoughtsTokenCount"] = turn.reasoning_tokens
    return usage


def _gemini_parts(turn: Turn) -> list[list[dict[str, Any]]]:
    """The parts of each streamed chunk (thought pieces, text pieces, then all calls)."""
    chunks: list[list[dict[str, Any]]] = [
        [{"text": p, "thought": True}] for p in _pieces(turn.thought, turn.chunk)]
    chunks += [[{"text": p}] for p in _pieces(turn.text, turn.chunk)]
    if turn.calls:
        chunks.append([{"functionCall": {"name": c.name, "args": c.args}} for c in turn.calls])
    return chunks or [[{"text": ""}]]


def _gemini_chunk(parts: list[dict[str, Any]], model: str, n: int,
                  finish: dict[str, Any]) -> dict[str, Any]:
    candidate = {"content": {"parts": parts, "role": "model"}, "index": 0}
    chunk = {"candidates": [{**candidate, **{k: v for k, v in finish.items() if k != "usage"}}],
             "modelVersion": model, "responseId": f"gem_{n}"}
    if "usage" in finish:
        chunk["usageMetadata"] = finish["usage"]
    return chunk


def _gemini(turn: Turn, model: str, n: int) -> list[Frame]:
    chunks = _gemini_parts(turn)
    frames = []
    for i, parts in enumerate(chunks):
        last = i == len(chunks) - 1
        finish = {"finishReason": "MAX_TOKENS" if turn.stop == "max_tokens" else "STOP",
                  "usage": _gemini_usage(turn)} if last else {}
        frames.append(_data(_gemini_chunk(parts, model, n, finish),
                            delta="functionCall" not in parts[0], sep="\r\n\r\n"))
    return frames


def body(api: Api, turn: Turn, *, model: str, n: int) -> dict[str, Any]:
    """The non-streaming answer of ``api``: the whole of ``turn`` in one JSON object, as the
    streamed form's last event describes it (Responses), or built the same way (the others)."""
    match api:
        case "openai":
            completed = json.loads(_responses(turn, model, n)[-1].data.split(b"data: ", 1)[1])
            return dict(completed["response"])
        case "openai-chat":
            return _chat_body(turn, model, n)
        case "anthropic":
            return _anthropic_body(turn, model, n)
        case "gemini":
            return gemini_body(turn, model=model, n=n)


def _chat_body(turn: Turn, model: str, n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.thought:
        message["reasoning_content"] = turn.thought
    if turn.calls:
        message["tool_calls"] = [{"id": call_id, "type": "function",
                                  "function": {"name": c.name, "arguments": _dump(c.args)}}
                                 for c, call_id in zip(turn.calls, call_ids(turn, n))]
    finish = "length" if turn.stop == "max_tokens" else "tool_calls" if turn.calls else "stop"
    prompt = turn.input_tokens + turn.cache_read_tokens + turn.cache_write_tokens
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": turn.output_tokens,
                      "total_tokens": prompt + turn.output_tokens,
                      "prompt_tokens_details": {"cached_tokens": turn.cache_read_tokens},
                      "completion_tokens_details": {"reasoning_tokens": turn.reasoning_tokens}}}


def _anthropic_body(turn: Turn, model: str, n: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.thought:
        content.append({"type": "thinking", "thinking": turn.thought, "signature": f"sig_{n}"})
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    content += [{"type": "tool_use", "id": call_id, "name": c.name, "input": c.args}
                for c, call_id in zip(turn.calls, call_ids(turn, n))]
    stop = "max_tokens" if turn.stop == "max_tokens" else "tool_use" if turn.calls else "end_turn"
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": turn.input_tokens,
                      "cache_creation_input_tokens": turn.cache_write_tokens,
                      "cache_read_input_tokens": turn.cache_read_tokens,
                      "output_tokens": turn.output_tokens}}


def gemini_body(turn: Turn, *, model: str, n: int) -> dict[str, Any]:
    """The non-streaming ``generateContent`` answer: every part merged into one candidate."""
    parts: list[dict[str, Any]] = []
    if turn.thought:
        parts.append({"text": turn.thought, "thought": True})
    if turn.text:
        parts.append({"text": turn.text})
    parts += [{"functionCall": {"name": c.name, "args": c.args}} for c in turn.calls]
    finish = {"finishReason": "MAX_TOKENS" if turn.stop == "max_tokens" else "STOP",
              "usage": _gemini_usage(turn)}
    return _gemini_chunk(parts, model, n, finish)


# -- errors -----------------------------------------------------------------------------------

_OPENAI_TYPES = {401: ("invalid_request_error", "invalid_api_key"),
                 403: ("invalid_request_error", None), 404: ("invalid_request_error", None),
                 429: ("requests", "rate_limit_exceeded"), 500: ("server_error", None)}
_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                    403: "permission_error", 404: "not_found_error", 429: "rate_limit_error",
                    500: "api_error", 529: "overloaded_error"}
_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                  404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                  503: "UNAVAILABLE"}


def error(api: Api, failure: Fail) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, extra headers and JSON body of ``failure`` in ``api``'s error shape."""
    message = failure.message or f"fake error {failure.status}"
    body: dict[str, Any]
    if api in ("openai", "openai-chat"):
        kind, code = _OPENAI_TYPES.get(failure.status, ("server_error", None))
        body = {"error": {"message": message, "type": kind, "param": None,
                          "code": failure.code or code}}
    elif api == "anthropic":
        body = {"type": "error", "error": {"type": failure.code or _ANTHROPIC_TYPES.get(
            failure.status, "api_error"), "message": message}}
    else:
        body = {"error": {"code": failure.status, "message": message,
                          "status": failure.code or _GOOGLE_STATUS.get(failure.status, "UNKNOWN")}}
    headers = [] if failure.retry_after is None else [("retry-after", f"{failure.retry_after:g}")]
    return failure.status, headers, json.dumps(body).encode()
