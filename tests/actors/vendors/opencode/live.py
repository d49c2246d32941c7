"""A minimal stand-in for the session on a real OpenCode server: the ``opencode`` supervisor
(``OpenCodeServers``), the driver's ``spawn`` (a ``ServerChild``) and a translator, without a
daemon. Used by the live tests and by ``record.py`` (recording lines as for pi and Codex:
``meta``, then ``call`` / ``send`` / ``recv`` in order).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import trio

from actors.harness import HarnessRequest, Output, Send
from actors.vendors.opencode import OpenCodeDriver, OpenCodeServers, OpenCodeTranslator
from protocol.events import Event
from protocol.models import Permissions
from supervisor.proc.spec import ProcessSpec
from tests.fakes.opencode_offline import MODEL, offline_env, provider_config

__all__ = ["LiveOpenCode", "make_request"]


def make_request(tmp: Path, port: int, binary: str, **fields: Any) -> HarnessRequest:
    """A request for a session in ``tmp/work`` with private XDG directories."""
    for name in ("work", "run"):
        (tmp / name).mkdir(exist_ok=True)
    options = {"binary": binary, "config": provider_config(port), **fields.pop("options", {})}
    permissions = fields.pop("permissions", Permissions(mode="auto"))
    return HarnessRequest(session_id=fields.pop("session_id", "s-test"), cwd=str(tmp / "work"),
                          model=MODEL, env=offline_env(tmp), options=options,
                          work_dir=str(tmp / "run"), permissions=permissions, **fields)


class LiveOpenCode:
    """One session attached to a shared server; events land in ``events``."""

    def __init__(self, servers: OpenCodeServers, request: HarnessRequest,
                 record: Callable[[dict[str, Any]], None] | None = None, *, opener: Any = None) -> None:
        self.driver = OpenCodeDriver(servers)
        self.opener = opener
        """A placement backend's ``open`` (the child is then the bridge, a process)."""
        self.request = request
        self.translator = OpenCodeTranslator(request)
        self.events: list[Event] = []
        self.child: Any = None
        self.ended = False
        self._record = record or (lambda line: None)
        self._changed = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[LiveOpenCode] = trio.TASK_STATUS_IGNORED) -> None:
        """Attach, send ``start``, pump frames until the attachment ends (or is cancelled)."""
        launch = self.driver.launch(self.request)
        public = msgspec.structs.replace(self.request, env={})
        self._record({"dir": "meta", "request": msgspec.to_builtins(public)})
        try:
            spec = ProcessSpec(key=f"session:{self.request.session_id}:1", kind="harness:opencode",
                               argv=launch.argv, cwd=launch.cwd, env=launch.env)
            async with self.driver.spawn(launch, spec, None, opener=self.opener) as child:
                self.child = child
                await self.call("start")
                task_status.started(self)
                async for frame in child.frames():
                    self._record({"dir": "recv", "frame": json.loads(frame)})
                    await self._handle(self.translator.receive(frame, 0.0))
        finally:
            self.ended = True
            self._notify()

    async def call(self, name: str, *args: Any) -> list[Output]:
        self._record({"dir": "call", "call": name, "args": list(args)})
        outputs = getattr(self.translator, name)(*args, 0.0)
        if outputs is not None:
            await self._handle(outputs)
        return outputs or []

    async def wait_for(self, predicate: Callable[[Event], bool], start: int = 0) -> Event:
        while True:
            for event in self.events[start:]:
                if predicate(event):
                    return event
            if self.ended:
                raise EOFError("the attachment ended before the expected event")
            await self._changed.wait()

    async def wait_ended(self) -> None:
        """Until the attachment ended (its child's frames ran out)."""
        while not self.ended:
            await self._changed.wait()

    async def _handle(self, outputs: list[Output]) -> None:
        for output in outputs:
            if isinstance(output, Send):
                self._record({"dir": "send", "frame": json.loads(output.data)})
                await self.child.send(output.data)
            else:
                self.events.append(output)
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()
