"""A fake OpenAI Responses API on 127.0.0.1, scripted per test, for driving real CLIs offline.

It serves ``POST /v1/responses`` as the real API streams it (server-sent events:
``response.created``, ``response.in_progress``, ``response.output_item.added``, text and
reasoning deltas, function/custom tool-call items with their arguments,
``response.output_item.done``, ``response.completed`` with usage), plus ``GET /v1/models``.
Each request takes the next scripted reply from a queue (a default reply once it is empty) and is
recorded (method, path, headers, parsed JSON body) so a test can assert that the next request
carries earlier history, such as the ``function_call_output`` of a tool call.

Replies (``openai_replies``): ``Text`` (with optional reasoning summary), ``Exec`` (Codex's
``exec_command`` tool: run a shell command), ``FunctionCall`` (any JSON tool, optionally in a
namespace, as Codex exposes MCP tools), ``CustomCall`` (a freeform tool such as ``apply_patch``),
``RawItem`` (any output item as given, e.g. a ``tool_search_call``), ``Stall`` (streams a little,
then holds the response open until the client goes away or ``release_stalls()`` is called: an
interrupt target), ``Failed`` (``response.failed`` mid-stream) and ``HttpError`` (a status with
OpenAI's JSON error body).

As a fixture: ``port = await nursery.start(server.serve)``. Standalone, for recording:
``python -m tests.fakes.openai_server --script replies.json [--port N] [--log requests.ndjson]``
prints the port on the first line of stdout; the script is a JSON array of replies tagged by
``kind`` (``[{"kind": "exec", "cmd": "touch x"}, {"kind": "text", "text": "done"}]``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import h11
import msgspec
import trio

from .http import read_request
from .openai_replies import (
    ERROR_DEFAULTS, CustomCall, Exec, Failed, FunctionCall, HttpError, RawItem, Reply, Stall, Text,
    SseWriter,
)

__all__ = [
    "CustomCall", "Exec", "FakeOpenAI", "Failed", "FunctionCall", "HttpError", "RawItem",
    "Recorded", "Reply", "Stall", "Text", "load_script", "main",
]


class Recorded(msgspec.Struct, kw_only=True, frozen=True):
    """One request as the server saw it; ``body`` is parsed JSON (``None`` when empty)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any = None


class FakeOpenAI:
    """The scripted server. Queue replies with ``add``; read ``requests`` after each turn."""

    def __init__(self, replies: Iterable[Reply] = (), *, default: Reply | None = None,
                 model: str = "gpt-fake") -> None:
        self.replies: deque[Reply] = deque(replies)
        self.default: Reply = default if default is not None else Text(text="ok")
        self.model = model
        self.requests: list[Recorded] = []
        self.port: int | None = None
        self.stalled = 0
        """How many responses are being held open right now."""
        self.on_request: Callable[[Recorded], None] | None = None
        self._changed = trio.Event()
        self._release = trio.Event()
        self._counter = itertools.count(1)

    def add(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        self.replies.extend(replies)

    def release_stalls(self) -> None:
        """Let every held ``Stall`` response finish normally."""
        self._release.set()
        self._release = trio.Event()

    def responses(self) -> list[Recorded]:
        """The recorded ``POST …/responses`` requests (model calls), in order."""
        return [r for r in self.requests if r.method == "POST" and r.path.endswith("/responses")]

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` holds; re-checked after every request and stream change."""
        while not predicate():
            await self._changed.wait()

    async def wait_responses(self, count: int) -> list[Recorded]:
        """Wait until at least ``count`` model calls arrived and return them."""
        await self.wait_for(lambda: len(self.responses()) >= count)
        return self.responses()

    async def serve(self, host: str = "127.0.0.1", port: int = 0, *,
                    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on ``host:port`` (0 picks one) and report the port; runs until cancelled."""
        listeners = await trio.open_tcp_listeners(port, host=host)
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, self._connection, listeners)
            task_status.started(self.port)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _connection(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request, body = await read_request(conn, stream)
                if request is None:
                    return
                await self._dispatch(stream, conn, request, body)
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            return
        finally:
            await stream.aclose()

    async def _dispatch(self, stream: trio.SocketStream, conn: h11.Connection,
                        request: h11.Request, body: bytes) -> None:
        path = request.target.decode("latin-1").split("?", 1)[0]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode("utf-8", "replace")
        record = Recorded(method=request.method.decode(), path=path, headers=headers, body=parsed)
        self.requests.append(record)
        if self.on_request is not None:
            self.on_request(record)
        self._notify()
        if record.method == "POST" and path.endswith("/responses"):
            reply = self.replies.popleft() if self.replies else self.default
            model = parsed.get("model", self.model) if isinstance(parsed, dict) else self.model
            await self._respond(stream, conn, reply, model)
        elif record.method == "GET" and path.endswith("/models"):
            await _send_json(stream, conn, 200, {"object": "list", "data": [
                {"id": self.model, "object": "model", "created": 0, "owned_by": "fake"}]})
        else:
            await _send_json(stream, conn, 404, _error_body(
                f"Unknown request URL: {record.method} {path}.", "invalid_request_error",
                "unknown_url"))

    async def _respond(self, stream: trio.SocketStream, conn: h11.Connection, reply: Reply,
                       model: str) -> None:
        if isinstance(reply, HttpError):
            message, kind, code = ERROR_DEFAULTS.get(reply.status, ("Error.", "server_error", None))
            extra = [] if reply.retry_after is None else [("retry-after", f"{reply.retry_after:g}")]
            await _send_json(stream, conn, reply.status, _error_body(
                reply.message or message, reply.type or kind, reply.code or code), extra)
            return
        await stream.send_all(conn.send(h11.Response(status_code=200, headers=[
            ("content-type", "text/event-stream"), ("cache-control", "no-cache"),
            ("x-request-id", f"req_{next(self._counter)}")])))
        sse = SseWriter(stream, conn, f"resp_{next(self._counter)}", model)
        await sse.begin()
        if isinstance(reply, Text):
            if reply.reasoning is not None:
                await sse.reasoning(reply.reasoning)
            await sse.message(reply.text, reply.chunk, reply.delay)
        elif isinstance(reply, Exec):
            if reply.text:
                await sse.message(reply.text, 0, 0.0)
            arguments: dict[str, Any] = {"cmd": reply.cmd}
            for key in ("workdir", "sandbox_permissions", "justification", "yield_time_ms"):
                if getattr(reply, key) is not None:
                    arguments[key] = getattr(reply, key)
            await sse.function_call("exec_command", arguments, reply.call_id, None)
        elif isinstance(reply, FunctionCall):
            await sse.function_call(reply.name, reply.arguments, reply.call_id, reply.namespace)
        elif isinstance(reply, CustomCall):
            await sse.custom_call(reply.name, reply.input, reply.call_id)
        elif isinstance(reply, RawItem):
            await sse.raw_item(reply.item)
        elif isinstance(reply, Stall):
            if reply.text:
                await sse.message(reply.text, 0, 0.0)
            if not await self._hold(stream):
                return
        elif isinstance(reply, Failed):
            await sse.failed(reply.code, reply.message)
            await stream.send_all(conn.send(h11.EndOfMessage()))
            return
        await sse.completed(reply)
        await stream.send_all(conn.send(h11.EndOfMessage()))

    async def _hold(self, stream: trio.SocketStream) -> bool:
        """Hold a stalled response; True when released, False when the client went away."""
        release = self._release  # taken before anyone can see this stall and release it
        self.stalled += 1
        self._notify()
        released = False
        try:
            async with trio.open_nursery() as nursery:
                async def watch_client() -> None:
                    # The client sends nothing while it waits for a response: any read that
                    # returns means it closed (or broke) the connection.
                    try:
                        await stream.receive_some(1)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        pass
                    nursery.cancel_scope.cancel()

                async def watch_release() -> None:
                    nonlocal released
                    await release.wait()
                    released = True
                    nursery.cancel_scope.cancel()

                nursery.start_soon(watch_client)
                nursery.start_soon(watch_release)
        finally:
            self.stalled -= 1
            self._notify()
        return released


def _error_body(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


async def _send_json(stream: trio.SocketStream, conn: h11.Connection, status: int,
                     payload: Any, extra: list[tuple[str, str]] | None = None) -> None:
    data = json.dumps(payload).encode()
    headers = [("content-type", "application/json"), ("content-length", str(len(data))),
               *(extra or [])]
    await stream.send_all(conn.send(h11.Response(status_code=status, headers=headers)))
    await stream.send_all(conn.send(h11.Data(data=data)))
    await stream.send_all(conn.send(h11.EndOfMessage()))


def load_script(path: str) -> list[Reply]:
    """Read a JSON array of replies tagged by ``kind``."""
    with open(path, "rb") as handle:
        return msgspec.json.decode(handle.read(), type=list[Reply])


async def _main(script: str | None, port: int, log: str | None) -> None:
    server = FakeOpenAI(load_script(script) if script else ())
    if log is not None:
        sink = open(log, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the server

        def write(record: Recorded) -> None:
            sink.write(msgspec.json.encode(record).decode() + "\n")
            sink.flush()

        server.on_request = write
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(server.serve, "127.0.0.1", port)
        print(bound, flush=True)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry: serve a script until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--script", help="JSON array of replies (kind: text, exec, …)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", help="append every request as one JSON line to this file")
    args = parser.parse_args(argv)
    try:
        trio.run(_main, args.script, args.port, args.log)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
