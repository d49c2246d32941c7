"""A fake Anthropic Messages API on 127.0.0.1, scripted per test, for driving the real Claude Code CLI.

What it serves (plain HTTP/1.1 over h11, keep-alive):

* ``HEAD /`` (the CLI's connectivity probe) → 200, empty.
* ``POST /v1/messages`` (any query, e.g. ``?beta=true``) → the next scripted reply: a ``Reply``
  streamed as server-sent events exactly in the API's order (``message_start``, ``ping``, per
  block ``content_block_start`` / ``content_block_delta`` … / ``content_block_stop``,
  ``message_delta`` with ``stop_reason`` and usage, ``message_stop``), or as one JSON message when
  the request did not ask to stream; or an ``ErrorReply``: the status with the API's JSON error
  body. When the script is used up it answers ``default`` (a short text reply).
* ``POST /v1/messages/count_tokens`` → a token estimate; anything else → 404 with an API error.

Every request is recorded (``requests``: method, target, body; credential headers dropped), so a
test can assert that the next request carries the earlier history (tool results, prior turns).
``wait_for_requests(n)`` waits on that condition instead of sleeping.

Slow replies: ``Reply.delay`` sleeps between events; ``Reply.hang`` stops the stream after the
first delta and holds the connection open until the client goes away (an interrupt), which gives
interrupt tests a deterministic mid-stream point.

The replies (``Reply``, ``ErrorReply``, ``text``, ``bash``) live in ``anthropic_script`` and are
re-exported here. Use from a test: ``async with running(Reply(...), ...) as server: server.port``; or
``await nursery.start(server.serve)``, which starts with the bound port. Standalone (for
recording): ``python -m tests.fakes.anthropic_server --script FILE [--port N]``, FILE being a JSON
list of replies such as ``[{"type": "reply", "blocks": [{"type": "text", "text": "hi"}]}]``; it
prints ``PORT <n>`` on stdout once listening and the recorded request bodies on stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable, AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import h11
import msgspec
import trio

from tests.fakes.http import read_request

from tests.fakes.anthropic_script import (
    ERROR_TYPES,
    Block,
    ErrorReply,
    Reply,
    Scripted,
    Text,
    Thinking,
    ToolUse,
    bash,
    load_script,
    text,
)

__all__ = [
    "ERROR_TYPES",
    "ErrorReply",
    "FakeAnthropic",
    "RecordedRequest",
    "Reply",
    "Scripted",
    "Text",
    "Thinking",
    "ToolUse",
    "bash",
    "load_script",
    "running",
    "text",
]


class RecordedRequest(msgspec.Struct, kw_only=True, frozen=True):
    """One request as the server saw it (credential headers are not kept)."""

    method: str
    target: str
    headers: dict[str, str]
    body: Any


_SECRET_HEADERS = {"x-api-key", "authorization", "cookie"}


class FakeAnthropic:
    """The server: a queue of scripted replies, the recorded requests, and ``serve``."""

    def __init__(self, script: Iterable[Scripted] = (), *, default: Scripted | None = None,
                 choose: Callable[[RecordedRequest], Scripted] | None = None) -> None:
        self.script: list[Scripted] = list(script)
        self.default: Scripted = default if default is not None else text("ok")
        self.choose = choose
        """Picks the reply from the request itself (for many sessions at once); ``script`` is then unused."""
        self.requests: list[RecordedRequest] = []
        self.port: int = 0
        self._ids = itertools.count(1)
        self._changed = trio.Event()

    def add(self, *replies: Scripted) -> None:
        """Append replies to the script (they answer after those already queued)."""
        self.script.extend(replies)

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """The recorded ``POST /v1/messages`` requests, in arrival order."""
        return [r for r in self.requests if r.method == "POST" and r.target.split("?")[0] == "/v1/messages"]

    async def wait_for_requests(self, count: int) -> list[RecordedRequest]:
        """Wait until ``count`` message requests arrived; cancellable, never times out itself."""
        while len(self.message_requests) < count:
            await self._changed.wait()
        return self.message_requests

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on 127.0.0.1 (``self.port``, 0 = any) and serve until cancelled; starts with the port."""
        listeners = await trio.open_tcp_listeners(self.port, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._connection, listeners)
            task_status.started(self.port)

    # -- internals -------------------------------------------------------------------------

    def _record(self, request: h11.Request, raw: bytes) -> RecordedRequest:
        headers = {k.decode().lower(): v.decode() for k, v in request.headers}
        kept = {k: v for k, v in headers.items() if k not in _SECRET_HEADERS}
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        rec = RecordedRequest(method=request.method.decode(), target=request.target.decode(), headers=kept, body=body)
        self.requests.append(rec)
        self._changed.set()
        self._changed = trio.Event()
        return rec

    async def _connection(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request, body = await read_request(conn, stream)
                if request is None:
                    return
                rec = self._record(request, body)
                await self._respond(conn, stream, rec)
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            return
        finally:
            await stream.aclose()

    async def _respond(self, conn: h11.Connection, stream: trio.SocketStream, rec: RecordedRequest) -> None:
        path = rec.target.split("?")[0]
        if rec.method == "HEAD":
            await _send(conn, stream, h11.Response(status_code=200, headers=[("content-length", "0")]))
            await _send(conn, stream, h11.EndOfMessage())
        elif rec.method == "POST" and path == "/v1/messages/count_tokens":
            await _json(conn, stream, 200, {"input_tokens": len(json.dumps(rec.body)) // 4})
        elif rec.method == "POST" and path == "/v1/messages":
            if self.choose is not None:
                reply = self.choose(rec)
            else:
                reply = self.script.pop(0) if self.script else self.default
            if isinstance(reply, ErrorReply):
                await _error(conn, stream, reply)
            elif isinstance(rec.body, dict) and rec.body.get("stream"):
                await self._stream(conn, stream, reply, rec.body.get("model", "claude-fake"))
            else:
                await _json(conn, stream, 200, self._message(reply, rec.body))
        else:
            await _error(conn, stream, ErrorReply(status=404, message=f"no route for {rec.method} {path}"))

    def _content(self, reply: Reply) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for block in reply.blocks:
            if isinstance(block, Text):
                out.append({"type": "text", "text": block.text})
            elif isinstance(block, Thinking):
                out.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
            else:
                out.append({"type": "tool_use", "id": block.id or f"toolu_fake_{next(self._ids):04d}",
                            "name": block.name, "input": block.input})
        return out

    def _message(self, reply: Reply, body: Any) -> dict[str, Any]:
        model = body.get("model", "claude-fake") if isinstance(body, dict) else "claude-fake"
        content = self._content(reply)
        return {
            "id": f"msg_fake_{next(self._ids):04d}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": _stop_reason(reply), "stop_sequence": None,
            "usage": _usage(reply, reply.output_tokens),
        }

    async def _stream(self, conn: h11.Connection, stream: trio.SocketStream, reply: Reply, model: str) -> None:
        headers = [("content-type", "text/event-stream"), ("cache-control", "no-cache"),
                   ("request-id", f"req_fake_{next(self._ids):04d}")]
        await _send(conn, stream, h11.Response(status_code=200, headers=headers))
        message = self._message(reply, {"model": model})
        start = dict(message, content=[], stop_reason=None, usage=_usage(reply, 1))
        events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start}),
                                                    ("ping", {"type": "ping"})]
        for index, block in enumerate(message["content"]):
            events.extend(_block_events(index, block, reply.blocks[index]))
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                         "usage": _usage(reply, reply.output_tokens)}))
        events.append(("message_stop", {"type": "message_stop"}))
        for name, data in events:
            payload = f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
            await _send(conn, stream, h11.Data(data=payload))
            if reply.hang and name == "content_block_delta":
                await _wait_closed(stream)
                return
            if reply.delay:
                await trio.sleep(reply.delay)
        await _send(conn, stream, h11.EndOfMessage())


def _stop_reason(reply: Reply) -> str:
    if reply.stop_reason is not None:
        return reply.stop_reason
    return "tool_use" if any(isinstance(b, ToolUse) for b in reply.blocks) else "end_turn"


def _usage(reply: Reply, output_tokens: int) -> dict[str, Any]:
    return {"input_tokens": reply.input_tokens, "cache_creation_input_tokens": reply.cache_write_tokens,
            "cache_read_input_tokens": reply.cache_read_tokens, "output_tokens": output_tokens,
            "service_tier": "standard"}


def _pieces(value: str, size: int) -> list[str]:
    return [value[i:i + size] for i in range(0, len(value), max(size, 1))] or [""]


def _block_events(index: int, block: dict[str, Any], spec: Block) -> list[tuple[str, dict[str, Any]]]:
    deltas: list[dict[str, Any]]
    if isinstance(spec, Text):
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(spec.text, spec.chunk)]
    elif isinstance(spec, Thinking):
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(spec.text, spec.chunk)]
        deltas.append({"type": "signature_delta", "signature": spec.signature})
    else:
        start = {"type": "tool_use", "id": block["id"], "name": spec.name, "input": {}}
        raw = json.dumps(spec.input, separators=(",", ":"))
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(raw, spec.chunk)]
    out = [("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})]
    out.extend(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas)
    out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


async def _send(conn: h11.Connection, stream: trio.SocketStream, event: h11.Event) -> None:
    data = conn.send(event)
    if data:
        await stream.send_all(data)


async def _json(conn: h11.Connection, stream: trio.SocketStream, status: int, body: Any,
                extra: dict[str, str] | None = None) -> None:
    payload = json.dumps(body).encode()
    headers = [("content-type", "application/json"), ("content-length", str(len(payload))),
               ("request-id", "req_fake_json"), *(extra or {}).items()]
    await _send(conn, stream, h11.Response(status_code=status, headers=headers))
    await _send(conn, stream, h11.Data(data=payload))
    await _send(conn, stream, h11.EndOfMessage())


async def _error(conn: h11.Connection, stream: trio.SocketStream, reply: ErrorReply) -> None:
    kind = reply.error_type or ERROR_TYPES.get(reply.status, "api_error")
    message = reply.message or f"fake {kind}"
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake_error"}
    headers = reply.headers if reply.retry else {"x-should-retry": "false", **reply.headers}
    await _json(conn, stream, reply.status, body, headers)


async def _wait_closed(stream: trio.SocketStream) -> None:
    """Hold a hung stream open until the client closes its side (bytes it sends are dropped)."""
    while await stream.receive_some(65536):
        pass


@asynccontextmanager
async def running(*script: Scripted, default: Scripted | None = None) -> AsyncIterator[FakeAnthropic]:
    """Run a server for the duration of the block; it is cancelled on exit."""
    server = FakeAnthropic(script, default=default)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        yield server
        nursery.cancel_scope.cancel()


async def _main(script: list[Scripted], port: int) -> None:
    server = FakeAnthropic(script)
    server.port = port
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(server.serve)
        print(f"PORT {bound}", flush=True)
        seen = 0
        while True:
            await server.wait_for_requests(seen + 1)
            for rec in server.message_requests[seen:]:
                print(json.dumps(msgspec.to_builtins(rec)), file=sys.stderr, flush=True)
            seen = len(server.message_requests)


def main(argv: list[str] | None = None) -> None:
    """Command line: serve a script file until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--script", required=True, help="JSON list of replies")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    with open(args.script, "rb") as f:
        script = load_script(f.read())
    try:
        trio.run(_main, script, args.port)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
