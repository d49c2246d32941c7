"""Drive a native ``Worker`` in process through its command interface, with scripted models.

``daemon`` plays the daemon's side of the worker's asks (MCP tools, diagnostics): a function
from each ask to its answer; ``asks`` records them.

The worker is asyncio code; each test is a plain function that runs one coroutine with ``run``
(``asyncio.run`` under a hard timeout). ``WorkerRig`` starts a worker whose model factory hands
out ``ScriptedLlm``s by model name (``models``), collects every event it emits, and waits for
conditions on them (``until``) instead of sleeping::

    def test_x(tmp_path):
        async def body():
            async with WorkerRig(tmp_path, [say("hi")]) as rig:
                events = await rig.turn("hello")
        run(body)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from google.adk.models.base_llm import BaseLlm

from actors.native.worker.handler import Worker
from protocol.events import Event, Permission, Result, Tool
from protocol.models import Permissions
from protocol.native_context import ContextSettings
from protocol.native import (
    Answer, Ask, Command, Decide, Interrupt, Price, Prompt, ProviderSettings, SetModel, Start, Steer,
)
from tests.fakes.model_script import Step
from tests.fakes.scripted_llm import ScriptedLlm

T = TypeVar("T")
Predicate = Callable[[Event], bool]


def run(make: Callable[[], Awaitable[T]], timeout: float = 30.0) -> T:
    """Run one asyncio coroutine to completion under a hard timeout."""
    async def bounded() -> T:
        async with asyncio.timeout(timeout):
            return await make()

    return asyncio.run(bounded())


def settings(model: str = "openai/gpt-4.1-mini") -> ProviderSettings:
    """Provider settings for ``model`` (never used on the wire: the models are scripted)."""
    provider, _, name = model.partition("/")
    return ProviderSettings(kind="openai", provider=provider, model=name,
                            base_url="http://127.0.0.1:9/v1")


def is_(kind: type[Event], **fields: Any) -> Predicate:
    """A predicate: an event of class ``kind`` with every one of ``fields``."""
    return lambda e: isinstance(e, kind) and all(getattr(e, k) == v for k, v in fields.items())


class WorkerRig:
    """One in-process worker on ``tmp/cwd`` with its store in ``tmp/store``."""

    def __init__(self, tmp: Path, steps: Iterable[Step | BaseException] = (), *,
                 mode: str = "auto", allow_tools: list[str] | None = None,
                 model: str = "openai/gpt-4.1-mini", session_id: str | None = None,
                 prices: dict[str, Price] | None = None,
                 models: dict[str, ScriptedLlm] | None = None,
                 context: ContextSettings = ContextSettings(), tools: list[str] | None = None,
                 environ: dict[str, str] | None = None,
                 daemon: Callable[[Ask], Answer] | None = None,
                 compaction: dict[str, Any] | None = None) -> None:
        self.cwd = tmp / "cwd"
        self.cwd.mkdir(exist_ok=True)
        self.home = tmp / "home"
        self.store = tmp / "store"
        self.llm = ScriptedLlm(steps)
        self.models = {model: self.llm, **(models or {})}
        self.events: list[Event] = []
        self.seen = 0
        self._start = Start(cwd=str(self.cwd), model=model, provider=settings(model),
                            permissions=Permissions(mode=mode,  # type: ignore[arg-type]
                                                    allow_tools=allow_tools or []),
                            session_id=session_id, store_dir=str(self.store),
                            prices=prices or {}, context=context, tools=tools,
                            daemon_tools=daemon is not None, compaction=compaction or {})
        self.asks: list[Ask] = []
        self._daemon = daemon
        self._answering: set[asyncio.Task[None]] = set()
        # A home of the test's own: instruction and skill discovery never sees the real one.
        self.worker = Worker(self._emit, model_factory=self._model,
                             environ={"HOME": str(self.home), **(environ or {})},
                             send_ask=self._ask if daemon is not None else None)
        self._changed = asyncio.Event()

    async def __aenter__(self) -> WorkerRig:
        await self.send(self._start)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.worker.shutdown()

    def _model(self, provider: ProviderSettings) -> BaseLlm:
        return self.models[provider.spec]

    def _ask(self, ask: Ask) -> None:
        """The daemon's side: ``daemon(ask)`` answers, delivered as the stdin loop would."""
        assert self._daemon is not None
        self.asks.append(ask)
        task = asyncio.get_running_loop().create_task(self.worker.handle(self._daemon(ask)))
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    def _emit(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()

    async def send(self, command: Command) -> None:
        await self.worker.handle(command)

    async def until(self, predicate: Predicate, timeout: float = 10.0) -> list[Event]:
        """The events since the last ``until`` up to the first that satisfies ``predicate``."""
        async with asyncio.timeout(timeout):
            while True:
                for index in range(self.seen, len(self.events)):
                    if predicate(self.events[index]):
                        found = self.events[self.seen:index + 1]
                        self.seen = index + 1
                        return found
                self._changed.clear()
                await self._changed.wait()

    async def prompt(self, text: str) -> None:
        """Send a prompt without waiting for anything."""
        await self.send(Prompt(text=text))

    async def turn(self, text: str) -> list[Event]:
        """Prompt and return the events up to the turn's ``result``."""
        await self.send(Prompt(text=text))
        return await self.until(is_(Result))

    async def permission(self) -> Permission:
        """Wait for the next ``permission`` event."""
        event = (await self.until(is_(Permission)))[-1]
        assert isinstance(event, Permission)
        return event

    async def decide(self, permission_id: str, decision: str) -> None:
        await self.send(Decide(permission_id=permission_id, decision=decision))  # type: ignore[arg-type]

    async def steer(self, text: str) -> None:
        await self.send(Steer(text=text))

    async def interrupt(self) -> None:
        await self.send(Interrupt())

    async def set_model(self, model: str) -> None:
        await self.send(SetModel(model=model, provider=settings(model)))

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait until ``condition()`` holds (re-checked at each event and every 10 ms)."""
        async with asyncio.timeout(timeout):
            while not condition():
                self._changed.clear()
                try:
                    async with asyncio.timeout(0.01):
                        await self._changed.wait()
                except TimeoutError:
                    pass


def tools(events: list[Event], phase: str | None = None) -> list[Tool]:
    """The ``tool`` events among ``events`` (of one phase, if given)."""
    return [e for e in events if isinstance(e, Tool) and (phase is None or e.phase == phase)]


def result(events: list[Event]) -> Result:
    """The last event, which must be a ``result``."""
    last = events[-1]
    assert isinstance(last, Result), last
    return last


def texts(request: Any) -> list[str]:
    """Every text part (not thoughts) of a recorded model request, in order."""
    return [p.text for c in request.contents for p in (c.parts or []) if p.text and not p.thought]


def responses(request: Any) -> list[dict[str, Any]]:
    """Every function response of a recorded model request, in order."""
    return [dict(p.function_response.response or {}) for c in request.contents
            for p in (c.parts or []) if p.function_response is not None]
