"""Run the trio fake model server in a background thread, for tests written in asyncio.

The model adapters are asyncio code (they run in the native worker), while the fakes are trio.
Rather than a subprocess (slower, and its recorded requests would have to be shipped back),
``ServerThread`` runs ``trio.run`` in a daemon thread and reaches into it with
``trio.from_thread``: the recorded requests are read directly, conditions are waited for on the
trio side (``wait``, bounded by a timeout that fails the test), and from inside a running
asyncio loop ``await thread.until(...)`` waits without blocking the loop::

    with ServerThread(FakeModels([call("write", path="a"), say("done")])) as srv:
        base_url = srv.url                     # http://127.0.0.1:PORT
        ...
        await srv.until(lambda: srv.server.hanging == 1)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

import trio

from tests.fakes.model_server import FakeModels

__all__ = ["ServerThread"]


class ServerThread:
    """A ``FakeModels`` served on 127.0.0.1 by a trio loop in its own thread."""

    def __init__(self, server: FakeModels | None = None) -> None:
        self.server = server if server is not None else FakeModels()
        self.port = 0
        self._token: trio.lowlevel.TrioToken | None = None
        self._scope: trio.CancelScope | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="fake-models", daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (add ``/v1`` for OpenAI-style clients)."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self._thread.start()
        if not self._ready.wait(10) or self._error is not None:
            raise RuntimeError("the fake model server did not start") from self._error
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._token is not None and self._scope is not None and self._thread.is_alive():
            try:
                trio.from_thread.run_sync(self._scope.cancel, trio_token=self._token)
            except trio.RunFinishedError:
                pass  # it already stopped, with the error raised below
        self._thread.join(10)
        if self._error is not None and kind is None:
            raise RuntimeError("the fake model server crashed") from self._error

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run sync ``fn(*args)`` on the server's trio thread (e.g. ``server.add``)."""
        return trio.from_thread.run_sync(fn, *args, trio_token=self._token)

    def wait(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """Block until ``predicate()`` holds on the server side; ``trio.TooSlowError`` after ``timeout``."""
        async def waiter() -> None:
            with trio.fail_after(timeout):
                await self.server.wait_for(predicate)

        trio.from_thread.run(waiter, trio_token=self._token)

    async def until(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """``wait`` from inside an asyncio loop, without blocking the loop."""
        await asyncio.to_thread(self.wait, predicate, timeout)

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # reported to __enter__ if it failed before ready
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._scope = nursery.cancel_scope
            self.port = await nursery.start(self.server.serve)
            self._ready.set()
