"""A fake model server speaking four APIs on 127.0.0.1 from one neutral script (trio + h11).

Routes (matched by path suffix, so any base-URL prefix works):

* ``POST …/responses``                   OpenAI Responses API
* ``POST …/chat/completions``            OpenAI Chat Completions
* ``POST …/messages``                    Anthropic Messages API
* ``POST …/models/M:streamGenerateContent`` (``?alt=sse``) and ``…:generateContent``  Gemini

A request with ``stream: true`` (Gemini: ``:streamGenerateContent``) is answered with server-sent
events, any other with the whole answer in one JSON body (``Turn.hang`` and ``delay`` apply to
streamed answers; a ``Turn.error`` is then the HTTP status of that kind).

Each model request takes the next step of the script (``tests.fakes.model_script``; a short
"ok" text once the script is used up), rendered by ``tests.fakes.model_wire`` for the route's
API, and is recorded (``requests``: api, method, path, query, every header, parsed body), so a
test asserts that request 2 carries the tool call and its result, or that no ``authorization``
header was sent. ``Turn(hang=True)`` streams up to the first delta and holds the response until
the client closes the connection (counted in ``hang_closed``) or ``release()`` is called.
``wait_for(predicate)`` waits for a condition instead of sleeping.

Agents make helper calls beside their turns (Gemini's model router, Claude Code's title and
token-count calls on a small model). ``aside`` (a predicate on the ``Recorded`` request) marks
them: they are answered with ``default`` without taking a step of the script, recorded with
``aside=True`` and left out of ``model_requests()``, so a script stays one step per turn call.

From trio: ``port = await nursery.start(server.serve)``. From asyncio or sync code:
``tests.fakes.model_thread.ServerThread`` runs it in a background thread. Standalone:
``python -m tests.fakes.model_server --script steps.json [--port N]`` prints the port on the
first line of stdout and each recorded request as one JSON line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import h11
import msgspec
import trio

from tests.fakes.http import read_request
from tests.fakes.model_script import Fail, Step, Turn, load_steps, say
from tests.fakes.model_wire import Api, Frame, error, render
from tests.fakes.model_wire import body as whole

__all__ = ["FakeModels", "Recorded", "main"]

_ERROR_STATUS = {"overloaded": 503, "rate_limit": 429, "server_error": 500}
"""A ``Turn.error`` answered to a request that did not stream: the HTTP status of that kind."""


class Recorded(msgspec.Struct, kw_only=True, frozen=True):
    """One request as the server saw it; ``api`` is ``None`` for a path it does not serve."""

    api: Api | None
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any = None
    aside: bool = False


class FakeModels:
    """The scripted server. Queue steps with ``add``; read ``requests`` after each call."""

    def __init__(self, steps: Iterable[Step] = (), *, default: Step | None = None,
                 aside: Callable[[Recorded], Step | bool | None] | None = None) -> None:
        self.steps: deque[Step] = deque(steps)
        self.default: Step = default if default is not None else say("ok")
        self.aside = aside
        """Given a recorded request, whether it is answered *beside* the script (not consuming a
        step, recorded with ``aside=True``): a ``Step`` to answer with, ``True`` for the default
        answer, or ``None``/``False`` to take the next scripted step (a CLI's helper calls such
        as title generation are answered beside)."""
        self.requests: list[Recorded] = []
        self.port = 0
        self.hanging = 0
        """How many responses are being held open right now."""
        self.hang_closed = 0
        """How many held responses ended because the client closed the connection."""
        self._changed = trio.Event()
        self._release = trio.Event()

    def add(self, *steps: Step) -> None:
        """Queue steps for the next model requests, in order."""
        self.steps.extend(steps)

    def release(self) -> None:
        """Let every held response finish normally."""
        self._release.set()
        self._release = trio.Event()

    def model_requests(self) -> list[Recorded]:
        """The recorded model calls (requests on a served route, not ``aside``), in order."""
        return [r for r in self.requests if r.api is not None and not r.aside]

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` holds; re-checked after every request and hang change."""
        while not predicate():
            await self._changed.wait()

    async def serve(self, host: str = "127.0.0.1", port: int = 0, *,
                    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on ``host:port`` (0 picks one) and report the port; runs until cancelled."""
        listeners = await trio.open_tcp_listeners(port, host=host)
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, self._connection, listeners)
            task_status.started(self.port)

    # -- internals ----------------------------------------------------------------------------

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
                        request: h11.Request, raw: bytes) -> None:
        path, _, query = request.target.decode("latin-1").partition("?")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        method = request.method.decode()
        api = _route(method, path)
        n = len(self.model_requests()) + 1
        record = Recorded(api=api, method=method, path=path, query=query, headers=headers,
                          body=body)
        beside = self.aside(record) if api is not None and self.aside is not None else None
        aside = beside is not None and beside is not False
        self.requests.append(msgspec.structs.replace(record, aside=aside))
        self._notify()
        if api is None:
            await _send_json(stream, conn, 404, {"error": {"message": f"no route {path}"}})
            return
        if aside:
            step = beside if not isinstance(beside, bool) and beside is not None else self.default
        else:
            step = self.steps.popleft() if self.steps else self.default
        if isinstance(step, Fail):
            status, extra, payload = error(api, step)
            await _send_json(stream, conn, status, payload, extra)
            return
        model = _model_name(api, path, body)
        streamed = path.endswith(":streamGenerateContent") if api == "gemini" else \
            isinstance(body, dict) and body.get("stream") is True
        if not streamed:
            if step.error is not None:
                status, extra, payload = error(api, Fail(status=_ERROR_STATUS[step.error]))
                await _send_json(stream, conn, status, payload, extra)
            else:
                await _send_json(stream, conn, 200, whole(api, step, model=model, n=n))
            return
        await self._stream(stream, conn, step, render(api, step, model=model, n=n))

    async def _stream(self, stream: trio.SocketStream, conn: h11.Connection, turn: Turn,
                      frames: list[Frame]) -> None:
        await stream.send_all(conn.send(h11.Response(status_code=200, headers=[
            ("content-type", "text/event-stream"), ("cache-control", "no-cache")])))
        hang_at = next((i for i, f in enumerate(frames) if f.delta), 0) if turn.hang else None
        for index, frame in enumerate(frames):
            if turn.delay and index:
                await trio.sleep(turn.delay)
            await stream.send_all(conn.send(h11.Data(data=frame.data)))
            if index == hang_at and not await self._hold(stream):
                return
        await stream.send_all(conn.send(h11.EndOfMessage()))

    async def _hold(self, stream: trio.SocketStream) -> bool:
        """Hold a response open; True when released, False when the client went away."""
        release = self._release
        self.hanging += 1
        self._notify()
        released = False
        try:
            async with trio.open_nursery() as nursery:
                async def watch_client() -> None:
                    # The client sends nothing while it waits: a read that returns means EOF.
                    try:
                        await stream.receive_some(1)
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        pass
                    self.hang_closed += 1
                    nursery.cancel_scope.cancel()

                async def watch_release() -> None:
                    nonlocal released
                    await release.wait()
                    released = True
                    nursery.cancel_scope.cancel()

                nursery.start_soon(watch_client)
                nursery.start_soon(watch_release)
        finally:
            self.hanging -= 1
            self._notify()
        return released


def _route(method: str, path: str) -> Api | None:
    if method != "POST":
        return None
    if path.endswith("/responses"):
        return "openai"
    if path.endswith("/chat/completions"):
        return "openai-chat"
    if path.endswith("/messages"):
        return "anthropic"
    if "/models/" in path and path.endswith((":streamGenerateContent", ":generateContent")):
        return "gemini"
    return None


def _model_name(api: Api, path: str, body: Any) -> str:
    if api == "gemini":
        return path.rsplit("/models/", 1)[1].split(":", 1)[0]
    return str(body.get("model", "fake-model")) if isinstance(body, dict) else "fake-model"


async def _send_json(stream: trio.SocketStream, conn: h11.Connection, status: int,
                     payload: Any, extra: list[tuple[str, str]] | None = None) -> None:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = [("content-type", "application/json"), ("content-length", str(len(data))),
               *(extra or [])]
    await stream.send_all(conn.send(h11.Response(status_code=status, headers=headers)))
    await stream.send_all(conn.send(h11.Data(data=data)))
    await stream.send_all(conn.send(h11.EndOfMessage()))


async def _main(steps: list[Step], port: int) -> None:
    server = FakeModels(steps)
    async with trio.open_nursery() as nursery:
        print(await nursery.start(server.serve, "127.0.0.1", port), flush=True)
        seen = 0
        while True:
            await server.wait_for(lambda: len(server.requests) > seen)
            for record in server.requests[seen:]:
                print(msgspec.json.encode(record).decode(), file=sys.stderr, flush=True)
            seen = len(server.requests)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry: serve a script until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--script", help="JSON array of steps (tests.fakes.model_script)")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    steps: list[Step] = []
    if args.script:
        with open(args.script, "rb") as handle:
            steps = load_steps(handle.read())
    try:
        trio.run(_main, steps, args.port)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
